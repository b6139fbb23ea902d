"""The caught-up rule (Kafka ``Replica.updateFetchStateOrThrow`` / ``isCaughtUp``)."""

from broker.replication import UNKNOWN_OFFSET, ReplicaState
from broker.replication.replica_state import FetchRounds

LAG_MS = 10_000


def test_fetch_at_the_leaders_current_end_is_caught_up_now():
    """Rule: fetch offset >= leader LEO now -> last_caught_up_time_ms = now."""
    state = ReplicaState(broker_id=2)
    state.on_fetch(fetch_offset=7, leader_log_end_offset=7, now_ms=500, broker_epoch=7)
    assert state.last_caught_up_time_ms == 500
    assert state.log_end_offset == 7


def test_reaching_the_previous_fetchs_leader_end_counts_from_the_previous_fetch():
    """Rule: fetch offset >= leader LEO at the previous fetch -> the previous fetch's time."""
    state = ReplicaState(broker_id=2)
    state.on_fetch(fetch_offset=0, leader_log_end_offset=10, now_ms=1_000, broker_epoch=7)
    state.on_fetch(fetch_offset=10, leader_log_end_offset=15, now_ms=2_000, broker_epoch=7)
    assert state.last_caught_up_time_ms == 1_000


def test_a_fetch_behind_both_leader_ends_leaves_the_caught_up_time_unchanged():
    """Rule: otherwise unchanged."""
    state = ReplicaState(broker_id=2)
    state.on_fetch(fetch_offset=5, leader_log_end_offset=5, now_ms=100, broker_epoch=7)
    state.on_fetch(fetch_offset=5, leader_log_end_offset=20, now_ms=200, broker_epoch=7)
    state.on_fetch(fetch_offset=12, leader_log_end_offset=30, now_ms=300, broker_epoch=7)
    assert state.last_caught_up_time_ms == 100


def test_is_caught_up_by_equal_log_end_or_within_the_lag_time():
    """isCaughtUp = LEO equals the leader's, or now - last caught up <= lag time."""
    state = ReplicaState(broker_id=2)
    state.on_fetch(fetch_offset=5, leader_log_end_offset=5, now_ms=0, broker_epoch=7)
    assert state.is_caught_up(5, now_ms=10 * LAG_MS, replica_lag_time_max_ms=LAG_MS)
    assert state.is_caught_up(9, now_ms=LAG_MS, replica_lag_time_max_ms=LAG_MS)
    assert not state.is_caught_up(9, now_ms=LAG_MS + 1, replica_lag_time_max_ms=LAG_MS)


def test_reset_for_a_new_leader_forgets_the_log_end_offset():
    """Rep resetReplicaState: LEO unknown; ISR members caught up now, others never."""
    member = ReplicaState.reset_for_new_leader(2, in_isr=True, now_ms=3_000)
    outsider = ReplicaState.reset_for_new_leader(3, in_isr=False, now_ms=3_000)
    assert member.log_end_offset == UNKNOWN_OFFSET == outsider.log_end_offset
    assert member.last_caught_up_time_ms == 3_000
    assert outsider.last_caught_up_time_ms is None
    assert not outsider.is_caught_up(0, now_ms=3_000, replica_lag_time_max_ms=LAG_MS)


def test_first_fetch_after_reset_does_not_use_a_previous_fetch_it_never_made():
    """With no previous fetch in this epoch, only the 'reached LEO now' branch applies."""
    state = ReplicaState.reset_for_new_leader(3, in_isr=False, now_ms=0)
    state.on_fetch(fetch_offset=3, leader_log_end_offset=8, now_ms=50, broker_epoch=7)
    assert state.last_caught_up_time_ms is None
    assert state.caught_up_ms_ago(60) is None


def _following_at_the_leader_end(now_ms: int) -> tuple[ReplicaState, FetchRounds]:
    """A follower fetched at the leader's LEO 5 at ``now_ms`` and now follows its session's rounds."""
    state, rounds = ReplicaState(broker_id=2), FetchRounds()
    state.on_fetch(fetch_offset=5, leader_log_end_offset=5, now_ms=now_ms, broker_epoch=7)
    state.follow(rounds)
    return state, rounds


def test_each_round_followed_counts_as_a_fetch_at_the_leader_end():
    state, rounds = _following_at_the_leader_end(1_000)
    rounds.last_ms = 4_000
    assert state.caught_up_ms_ago(4_500) == 500
    assert state.is_caught_up(9, now_ms=4_000 + LAG_MS, replica_lag_time_max_ms=LAG_MS), (
        "the leader appended after the round: caught up as of the round"
    )
    assert not state.is_caught_up(9, now_ms=4_001 + LAG_MS, replica_lag_time_max_ms=LAG_MS)


def test_rounds_stamped_after_the_following_stopped_count_for_nothing():
    state, rounds = _following_at_the_leader_end(1_000)
    rounds.last_ms = 2_000
    state.stop_following()
    rounds.last_ms = 9_000
    assert state.caught_up_ms_ago(9_000) == 7_000, "the rounds up to the stop are kept, none after"


def test_a_recorded_fetch_takes_the_rounds_followed_as_the_previous_fetch_and_stops_following():
    """The previous-fetch rule applies to the last round: the follower had everything the leader
    had then (LEO 5), so a fetch at 5 after an append is caught up as of that round."""
    state, rounds = _following_at_the_leader_end(1_000)
    rounds.last_ms = 6_000
    state.on_fetch(fetch_offset=5, leader_log_end_offset=8, now_ms=6_200, broker_epoch=7)
    assert (state.last_fetch_time_ms, state.last_caught_up_time_ms, state.rounds) == (6_200, 6_000, None)
    rounds.last_ms = 60_000
    assert state.caught_up_ms_ago(60_000) == 54_000
