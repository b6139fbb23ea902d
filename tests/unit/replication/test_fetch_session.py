"""Incremental fetch sessions: both sides agree on what the leader holds, and answers carry only news."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable

import pytest

from broker.errors import NotLeaderOrFollower
from broker.replication.actions import DivergingEpoch
from broker.replication.fetch_session import (
    FULL_EPOCH,
    FollowerSession,
    LeaderSession,
    LeaderSessions,
    SessionError,
    SessionRefused,
    SessionRequest,
)
from broker.replication.fetch_wire import FetchPartition, FetchPartitionResponse, FetchRequest


def _by_key(partitions: Iterable[FetchPartition]) -> dict[tuple[str, int], FetchPartition]:
    return {(p.topic, p.partition): p for p in partitions}


def _partition(number: int, offset: int = 0, topic: str = "orders") -> FetchPartition:
    return FetchPartition(topic, number, offset, 0, 1, 0)


def _request(replica_id: int, built: SessionRequest) -> FetchRequest:
    return FetchRequest(
        replica_id=replica_id,
        broker_epoch=1,
        max_wait_ms=0,
        max_bytes=1 << 20,
        partitions=built.partitions,
        session_id=built.session_id,
        session_epoch=built.session_epoch,
        forgotten=built.forgotten,
    )


def _sessions() -> LeaderSessions:
    ids = itertools.count(1000)
    return LeaderSessions(new_session_id=lambda: next(ids))


def _round(follower: FollowerSession, leaders: LeaderSessions, partitions: list[FetchPartition]):
    built = follower.build(_by_key(partitions))
    session = leaders.open(_request(2, built))
    if isinstance(session, SessionRefused):
        follower.on_answered(built.session_id, session.error)
    else:
        follower.on_answered(session.session_id, SessionError.NONE)
    return built, session


def _answer(number: int, hw: int = 5, *, records: bytes = b"", **extra) -> FetchPartitionResponse:
    return FetchPartitionResponse("orders", number, hw, 0, hw, records=records, **extra)


def test_a_full_fetch_opens_a_session_and_names_every_partition() -> None:
    follower, leaders = FollowerSession(), _sessions()
    built, session = _round(follower, leaders, [_partition(0), _partition(1)])
    assert built.session_epoch == FULL_EPOCH and built.session_id == 0
    assert [p.partition for p in built.partitions] == [0, 1]
    assert isinstance(session, LeaderSession) and session.session_id == 1000
    assert (follower.session_id, follower.epoch) == (1000, 1)


def test_an_incremental_fetch_names_only_changed_new_and_forgotten_partitions() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _round(follower, leaders, [_partition(0), _partition(1), _partition(2)])
    built, session = _round(follower, leaders, [_partition(0), _partition(1, offset=7), _partition(3)])
    assert (built.session_id, built.session_epoch) == (1000, 1)
    assert [(p.partition, p.fetch_offset) for p in built.partitions] == [(1, 7), (3, 0)]
    assert built.forgotten == (("orders", 2),)
    assert isinstance(session, LeaderSession)
    assert session.partitions == follower.sent
    assert sorted(key[1] for key in session.partitions) == [0, 1, 3]
    assert session.partitions[("orders", 1)].fetch_offset == 7


def test_an_unchanged_round_names_nothing() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _round(follower, leaders, [_partition(0), _partition(1)])
    built, session = _round(follower, leaders, [_partition(0), _partition(1)])
    assert built.partitions == [] and built.forgotten == ()
    assert isinstance(session, LeaderSession) and len(session.partitions) == 2


def test_a_full_fetch_answers_every_partition_an_incremental_one_only_news() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _, full = _round(follower, leaders, [_partition(0), _partition(1), _partition(2), _partition(3), _partition(4)])
    assert isinstance(full, LeaderSession)
    quiet = [_answer(n) for n in range(5)]
    assert all(full.has_news(answer) for answer in quiet)
    full.answered(quiet)
    _, incremental = _round(follower, leaders, [_partition(n) for n in range(5)])
    assert isinstance(incremental, LeaderSession)
    assert not any(incremental.has_news(answer) for answer in quiet)
    assert incremental.has_news(_answer(0, hw=6)), "a HW the follower was not sent yet"
    assert incremental.has_news(_answer(1, records=b"batch"))
    assert incremental.has_news(_answer(2, error=NotLeaderOrFollower("moved")))
    assert incremental.has_news(_answer(3, diverging_epoch=DivergingEpoch(0, 3)))
    assert incremental.has_news(FetchPartitionResponse("orders", 4, 5, 1, 5)), "the log start moved"


def test_a_partition_added_to_a_session_is_answered_once_even_without_news() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _round(follower, leaders, [_partition(0)])
    _, session = _round(follower, leaders, [_partition(0), _partition(1)])
    assert isinstance(session, LeaderSession)
    assert session.has_news(_answer(1))
    session.answered([_answer(1)])
    assert not session.has_news(_answer(1))


def test_a_forgotten_partition_is_answered_afresh_when_it_returns() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _, session = _round(follower, leaders, [_partition(0), _partition(1)])
    assert isinstance(session, LeaderSession)
    session.answered([_answer(0), _answer(1)])
    _round(follower, leaders, [_partition(0)])
    _, session = _round(follower, leaders, [_partition(0), _partition(1)])
    assert isinstance(session, LeaderSession) and session.has_news(_answer(1))


def test_an_unknown_session_is_refused_and_the_follower_starts_over_with_a_full_fetch() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _round(follower, leaders, [_partition(0)])
    restarted_leader = _sessions()
    built, refused = _round(follower, restarted_leader, [_partition(0)])
    assert refused == SessionRefused(SessionError.FETCH_SESSION_ID_NOT_FOUND)
    assert built.session_epoch == 1
    built, session = _round(follower, restarted_leader, [_partition(0)])
    assert built.session_epoch == FULL_EPOCH and [p.partition for p in built.partitions] == [0]
    assert isinstance(session, LeaderSession)


def test_an_unexpected_epoch_is_refused() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _round(follower, leaders, [_partition(0)])
    built = follower.build(_by_key([_partition(0)]))
    assert isinstance(leaders.open(_request(2, built)), LeaderSession)
    follower.reset()
    replayed = leaders.open(_request(2, built))
    assert replayed == SessionRefused(SessionError.INVALID_FETCH_SESSION_EPOCH)


def test_one_session_per_follower_broker_and_a_new_full_fetch_replaces_it() -> None:
    leaders = _sessions()
    for replica_id in (2, 3, 2, 2, 3):
        full = FollowerSession().build(_by_key([_partition(0)]))
        assert isinstance(leaders.open(_request(replica_id, full)), LeaderSession)
    assert sorted(leaders.by_replica) == [2, 3]


def test_a_sessionless_fetch_opens_nothing_and_drops_the_followers_session() -> None:
    leaders = _sessions()
    leaders.open(_request(2, FollowerSession().build(_by_key([_partition(0)]))))
    sessionless = leaders.open(_request(2, SessionRequest(0, -1, [_partition(0)], ())))
    assert isinstance(sessionless, LeaderSession) and sessionless.answers_all
    assert leaders.by_replica == {}


def test_the_epoch_wraps_to_one_not_to_the_full_fetch_epoch() -> None:
    follower, leaders = FollowerSession(), _sessions()
    _round(follower, leaders, [_partition(0)])
    follower.epoch = leaders.by_replica[2].next_epoch = 2**31 - 1
    _round(follower, leaders, [_partition(0)])
    assert follower.epoch == leaders.by_replica[2].next_epoch == 1


@pytest.mark.parametrize("seed", range(20))
def test_both_sides_agree_whatever_the_rounds_and_the_lost_requests(seed: int) -> None:
    """Random partition sets, offsets and requests lost before or after the leader saw them."""
    rng = random.Random(seed)
    follower, leaders = FollowerSession(), _sessions()
    offsets = {n: 0 for n in range(8)}
    for _ in range(200):
        for n in rng.sample(sorted(offsets), rng.randint(0, 3)):
            offsets[n] += rng.randint(1, 5)
        fetched = [_partition(n, offsets[n]) for n in sorted(rng.sample(sorted(offsets), rng.randint(0, 8)))]
        built = follower.build(_by_key(fetched))
        fate = rng.random()
        if fate < 0.1:
            follower.reset()
            continue
        session = leaders.open(_request(2, built))
        if fate < 0.2:
            follower.reset()
            continue
        error = session.error if isinstance(session, SessionRefused) else SessionError.NONE
        follower.on_answered(built.session_id if isinstance(session, SessionRefused) else session.session_id, error)
        if isinstance(session, LeaderSession):
            assert session.partitions == {(p.topic, p.partition): p for p in fetched}
            assert session.partitions == follower.sent


def _incremental_session(*partition_numbers: int) -> tuple[FollowerSession, LeaderSessions, LeaderSession]:
    """A session past its full fetch, holding ``partition_numbers``."""
    follower, leaders = FollowerSession(), _sessions()
    _, session = _round(follower, leaders, [_partition(n) for n in partition_numbers])
    assert isinstance(session, LeaderSession)
    rounds = session.rounds
    session.mark_quiet(("orders", partition_numbers[0]), 1)
    session.begin_round(0, 1, 1)
    assert session.rounds is not rounds and session.rounds.last_ms is None, "a full fetch leaves the rounds behind"
    assert not session.quiet, "and records every partition"
    _, session = _round(follower, leaders, [_partition(n) for n in partition_numbers])
    assert isinstance(session, LeaderSession)
    return follower, leaders, session


def test_an_incremental_round_is_stamped_and_keeps_quiet_partitions_quiet() -> None:
    _, _, session = _incremental_session(0, 1)
    session.begin_round(1_000, 1, 1)
    assert session.rounds.last_ms == 1_000
    session.mark_quiet(("orders", 0), 41)
    assert session.is_quiet(("orders", 0), 41) and not session.is_quiet(("orders", 0), 42)
    assert not session.is_quiet(("orders", 1), 41)
    rounds = session.rounds
    session.begin_round(2_500, 1, 1)
    assert session.rounds is rounds and rounds.last_ms == 2_500
    assert session.is_quiet(("orders", 0), 41), "the driver does not look at it: its follower counts the stamp"


def test_a_broker_epoch_other_than_the_registered_or_the_quiet_one_records_everything() -> None:
    _, _, session = _incremental_session(0)
    session.mark_quiet(("orders", 0), 7)
    stamped = session.rounds
    session.begin_round(1_000, 1, 2)
    assert not session.is_quiet(("orders", 0), 7), "not the registered broker epoch"
    assert session.rounds is not stamped and stamped.last_ms is None, "the old rounds are never stamped again"
    session.mark_quiet(("orders", 0), 7)
    session.begin_round(1_100, 2, 2)
    assert not session.is_quiet(("orders", 0), 7), "a new incarnation: quiet was found under 1"


def test_naming_or_forgetting_a_partition_ends_its_quiet() -> None:
    follower, leaders, session = _incremental_session(0, 1, 2)
    for number in (0, 1, 2):
        session.mark_quiet(("orders", number), 7)
    _, session = _round(follower, leaders, [_partition(0, offset=5), _partition(1)])
    assert isinstance(session, LeaderSession)
    assert [session.is_quiet(("orders", n), 7) for n in (0, 1, 2)] == [False, True, False]
    assert session.take_released() == [("orders", 2)], "forgotten while quiet: its follower must stop counting rounds"
    assert session.take_released() == []


def test_a_stirred_partition_is_active_again_and_wakes_the_parked_request() -> None:
    _, _, session = _incremental_session(0, 1)
    woken: list[int] = []
    session.wake = lambda: woken.append(1)
    session.mark_quiet(("orders", 0), 7)
    assert list(session.active) == [("orders", 1)]
    session.stir(("orders", 1))
    assert woken == [] and session.take_stirred() == [], "stirring an active partition changes nothing"
    session.stir(("orders", 0))
    assert woken == [1] and set(session.active) == {("orders", 0), ("orders", 1)}
    assert session.take_stirred() == [("orders", 0)] and session.take_stirred() == []


def test_active_and_quiet_always_split_the_session_s_partitions() -> None:
    rng = random.Random(29)
    follower, leaders = FollowerSession(), _sessions()
    offsets = {n: 0 for n in range(8)}
    _, session = _round(follower, leaders, [_partition(n) for n in offsets])
    assert isinstance(session, LeaderSession)
    for step in range(400):
        action = rng.choice(["quiet", "stir", "round", "grow", "forget", "record_all"])
        key = ("orders", rng.choice(list(offsets)))
        if action == "quiet":
            session.mark_quiet(key, step)
        elif action == "stir":
            session.stir(key)
        elif action == "grow":
            offsets[key[1]] += 1
        elif action == "forget" and len(offsets) > 1:
            offsets.pop(key[1])
        elif action == "record_all":
            session.begin_round(step, 1, 2)
        if action in ("round", "grow", "forget"):
            _, session = _round(follower, leaders, [_partition(n, offset) for n, offset in offsets.items()])
            assert isinstance(session, LeaderSession)
        assert set(session.active) | set(session.quiet) == set(session.partitions)
        assert not set(session.active) & set(session.quiet)
