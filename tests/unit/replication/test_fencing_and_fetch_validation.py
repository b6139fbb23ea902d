"""Fencing (KIP-320) and follower fetch validation on the leader (Partition.fetchRecords)."""

from broker.errors import (
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    UnknownLeaderEpoch,
)
from broker.replication import NO_LEADER_EPOCH, DivergingEpoch, check_fetch_position
from broker.storage.epoch_cache import EpochEntry, LeaderEpochCache
from tests.unit.replication.factories import current_incarnation, fetch, leader_cache, make_leader


def test_leader_epoch_fencing():
    """Older epoch -> FENCED_LEADER_EPOCH; newer -> UNKNOWN_LEADER_EPOCH; absent -> ok."""
    leader = make_leader(leader_epoch=5)
    assert isinstance(leader.check_leader_epoch(4), FencedLeaderEpoch)
    newer = leader.check_leader_epoch(6)
    assert isinstance(newer, UnknownLeaderEpoch) and newer.retriable
    assert leader.check_leader_epoch(5) is None
    assert leader.check_leader_epoch(NO_LEADER_EPOCH) is None


def test_fenced_fetch_does_not_touch_follower_state():
    """A refused fetch answers the error and records nothing (scenario 16)."""
    leader = make_leader(replicas=(1, 2), log_end_offset=10)
    outcome = leader.on_follower_fetch(
        2,
        10,
        1,
        last_fetched_epoch=5,
        current_leader_epoch=4,
        epoch_cache=leader_cache(leader),
        **current_incarnation(2),
    )
    assert isinstance(outcome.error, FencedLeaderEpoch)
    assert outcome.read_from_offset is None
    assert leader.follower(2).log_end_offset == -1
    assert leader.high_watermark == 0


def test_fetch_from_a_broker_that_is_not_a_replica_is_refused():
    """followerReplicaOrThrow: a non-replica (or the leader itself) cannot fetch as follower."""
    leader = make_leader(replicas=(1, 2, 3))
    assert isinstance(fetch(leader, 9, 0, now_ms=1).error, NotLeaderOrFollower)
    assert isinstance(fetch(leader, 1, 0, now_ms=1).error, NotLeaderOrFollower)


def test_fetch_outside_the_log_is_out_of_range_with_the_leader_offsets():
    """A fetch offset below log start or above LEO -> OFFSET_OUT_OF_RANGE naming the range."""
    leader = make_leader(replicas=(1, 2), log_end_offset=20, high_watermark=20)
    leader.advance_log_start_offset(10)
    cache = leader_cache(leader)
    low = leader.on_follower_fetch(
        2, 4, 1, last_fetched_epoch=-1, current_leader_epoch=5, epoch_cache=cache, **current_incarnation(2)
    )
    assert isinstance(low.error, OffsetOutOfRange)
    assert (low.log_start_offset, low.log_end_offset) == (10, 20)
    assert low.error.details["log_start_offset"] == 10
    high = leader.on_follower_fetch(
        2, 21, 1, last_fetched_epoch=-1, current_leader_epoch=5, epoch_cache=cache, **current_incarnation(2)
    )
    assert isinstance(high.error, OffsetOutOfRange)


def test_fetch_beyond_the_epoch_end_diverges_instead_of_out_of_range():
    """With a last fetched epoch, a fetch past the leader's end of that epoch diverges."""
    leader = make_leader(replicas=(1, 2), log_end_offset=20, high_watermark=20)
    outcome = fetch(leader, 2, 25, now_ms=1)
    assert outcome.diverging_epoch == DivergingEpoch(5, 20)
    assert outcome.error is None and outcome.read_from_offset is None


def test_last_fetched_epoch_unknown_to_the_leader_is_out_of_range():
    """Partition.fetchRecords: no end offset for the last fetched epoch -> out of range."""
    leader = make_leader(replicas=(1, 2), log_end_offset=20, high_watermark=20)
    outcome = leader.on_follower_fetch(
        2,
        20,
        1,
        last_fetched_epoch=7,
        current_leader_epoch=5,
        epoch_cache=leader_cache(leader),
        **current_incarnation(2),
    )
    assert isinstance(outcome.error, OffsetOutOfRange)


def test_acks_all_refused_before_append_below_min_isr():
    """NOT_ENOUGH_REPLICAS when the committed ISR is below min ISR; nothing written."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1,), min_insync_replicas=2)
    error = leader.check_produce_admission()
    assert isinstance(error, NotEnoughReplicas) and error.retriable
    healthy = make_leader(replicas=(1, 2, 3), isr=(1, 2), min_insync_replicas=2)
    assert healthy.check_produce_admission() is None


def test_fetch_below_log_start_is_out_of_range_even_when_epochs_diverge():
    """fetchRecords: below the log start -> OFFSET_OUT_OF_RANGE whatever the epochs say,
    so a follower that fell behind retention restarts at the log start (scenario 17)."""
    cache = LeaderEpochCache([EpochEntry(1, 0), EpochEntry(3, 40)])
    position = check_fetch_position("orders", 0, 5, 2, log_start_offset=30, log_end_offset=50, epoch_cache=cache)
    assert isinstance(position, OffsetOutOfRange)
    diverging = check_fetch_position("orders", 0, 45, 2, log_start_offset=30, log_end_offset=50, epoch_cache=cache)
    assert diverging == DivergingEpoch(1, 40)
    in_range = check_fetch_position("orders", 0, 45, -1, log_start_offset=30, log_end_offset=50, epoch_cache=cache)
    assert in_range is None
