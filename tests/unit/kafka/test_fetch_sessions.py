"""Client fetch sessions (KIP-227), the broker's pure cache: Kafka's rules for full, sessionless and incremental fetches."""

from __future__ import annotations

import itertools

from broker.kafka.fetch_sessions import SESSIONLESS, ClientFetchSessions, FetchPosition, SessionError

A, B, C = ("orders", 0), ("orders", 1), ("payments", 0)
OWNER = "User:alice"


def position(offset: int) -> FetchPosition:
    return FetchPosition(offset, 1 << 20, -1)


def cache(capacity: int = 10) -> ClientFetchSessions:
    ids = itertools.count(7)
    return ClientFetchSessions(capacity, lambda: next(ids), eviction_ms=1000)


def opened(sessions: ClientFetchSessions, now_ms: int = 0, owner: str = OWNER) -> int:
    context = sessions.begin(0, 0, owner, [(A, position(0)), (B, position(5))], [], now_ms)
    session_id, included = sessions.answered(context, [(False, (10, 10, 0)), (False, (5, 5, 0))], owner, now_ms)
    assert included == [True, True]
    return session_id


def test_a_full_fetch_opens_a_session_and_an_incremental_one_answers_only_news() -> None:
    sessions = cache()
    session_id = opened(sessions)
    assert session_id == 7
    context = sessions.begin(session_id, 1, OWNER, [(A, position(10))], [], 1)
    assert context.error == SessionError.NONE and context.incremental
    assert [key for key, _ in context.reads] == [A, B], "the session's partitions, the named one updated"
    assert dict(context.reads)[A] == position(10) and dict(context.reads)[B] == position(5)
    answer_id, included = sessions.answered(context, [(False, (10, 10, 0)), (False, (7, 7, 0))], OWNER, 1)
    assert (answer_id, included) == (session_id, [False, True]), "A unchanged, B's high watermark moved"
    context = sessions.begin(session_id, 2, OWNER, [], [], 2)
    assert sessions.answered(context, [(True, (10, 10, 0)), (False, (7, 7, 0))], OWNER, 2)[1] == [True, False]


def test_forgotten_partitions_leave_the_session_and_new_ones_join() -> None:
    sessions = cache()
    session_id = opened(sessions)
    context = sessions.begin(session_id, 1, OWNER, [(C, position(3))], [A], 1)
    assert [key for key, _ in context.reads] == [B, C]
    assert sessions.answered(context, [(False, (5, 5, 0)), (False, (9, 9, 0))], OWNER, 1)[1] == [False, True]


def test_a_wrong_epoch_an_unknown_id_or_another_principal_is_refused_and_changes_nothing() -> None:
    sessions = cache()
    session_id = opened(sessions)
    assert (
        sessions.begin(session_id, 2, OWNER, [(C, position(0))], [], 1).error
        == SessionError.INVALID_FETCH_SESSION_EPOCH
    )
    assert sessions.begin(99, 1, OWNER, [], [], 1).error == SessionError.FETCH_SESSION_ID_NOT_FOUND
    assert sessions.begin(session_id, 1, "User:mallory", [], [A, B], 1).error == SessionError.FETCH_SESSION_ID_NOT_FOUND
    context = sessions.begin(session_id, 1, OWNER, [], [], 1)
    assert [key for key, _ in context.reads] == [A, B]


def test_epoch_minus_one_closes_the_session_and_answers_outside_any() -> None:
    sessions = cache()
    session_id = opened(sessions)
    context = sessions.begin(session_id, -1, OWNER, [(A, position(0))], [], 1)
    assert not context.incremental
    assert sessions.answered(context, [(False, (10, 10, 0))], OWNER, 1) == (SESSIONLESS, [True])
    assert len(sessions) == 0
    assert sessions.begin(session_id, 1, OWNER, [], [], 1).error == SessionError.FETCH_SESSION_ID_NOT_FOUND


def test_a_full_cache_evicts_only_a_session_idle_long_enough() -> None:
    sessions = cache(capacity=1)
    first = opened(sessions, now_ms=0)
    assert opened(sessions, now_ms=500) == SESSIONLESS, "the only session is not idle long enough"
    second = opened(sessions, now_ms=1500)
    assert second not in (SESSIONLESS, first)
    assert sessions.begin(first, 1, OWNER, [], [], 1500).error == SessionError.FETCH_SESSION_ID_NOT_FOUND


def test_a_session_in_use_is_not_the_one_evicted() -> None:
    sessions = cache(capacity=2)
    first, second = opened(sessions, now_ms=0), opened(sessions, now_ms=0)
    sessions.begin(first, 1, OWNER, [], [], 1200)
    third = opened(sessions, now_ms=1300)
    assert third != SESSIONLESS
    assert sessions.begin(second, 1, OWNER, [], [], 1300).error == SessionError.FETCH_SESSION_ID_NOT_FOUND
    assert sessions.begin(first, 2, OWNER, [], [], 1300).error == SessionError.NONE
