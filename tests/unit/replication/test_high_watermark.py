"""The leader's high watermark (Partition.maybeIncrementLeaderHW) and the follower's."""

import pytest

from broker.errors import OffsetOutOfRange
from broker.replication import HwUpdate
from tests.unit.replication.factories import LAG_MS, fetch, make_leader, registered_broker_epoch


def test_high_watermark_is_the_minimum_log_end_over_the_isr():
    """HW = min(leader LEO, LEO of every maximal-ISR member)."""
    leader = make_leader(log_end_offset=0)
    leader.on_leader_append(10, now_ms=1)
    fetch(leader, 2, 10, now_ms=2)
    assert leader.high_watermark == 0  # broker 3's LEO is still unknown
    outcome = fetch(leader, 3, 6, now_ms=3)
    assert outcome.hw_update == HwUpdate(0, 6)
    assert leader.high_watermark == 6


def test_fetch_response_carries_the_high_watermark_before_the_fetch():
    """Kafka reads before updating the follower: the response HW is the old one."""
    leader = make_leader(replicas=(1, 2), log_end_offset=8)
    outcome = fetch(leader, 2, 8, now_ms=1)
    assert outcome.high_watermark == 0
    assert outcome.hw_update == HwUpdate(0, 8)
    assert outcome.read_from_offset == 8
    assert fetch(leader, 2, 8, now_ms=2).high_watermark == 8


def test_unknown_follower_log_end_blocks_the_high_watermark_after_leader_change():
    """Rep resetReplicaState: a new leader waits for every in-sync follower to fetch."""
    leader = make_leader(log_end_offset=50, high_watermark=30)
    assert leader.high_watermark == 30
    fetch(leader, 2, 50, now_ms=1)
    assert leader.high_watermark == 30
    assert not leader.high_watermark_reached_epoch_start
    fetch(leader, 3, 50, now_ms=2)
    assert leader.high_watermark == 50
    assert leader.high_watermark_reached_epoch_start


def test_high_watermark_frozen_below_min_isr():
    """Rule 1: committed ISR < min(min ISR, RF) -> the HW does not move (invariant 4)."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1,), min_insync_replicas=2, log_end_offset=0)
    assert leader.on_leader_append(100, now_ms=1) is None
    assert leader.high_watermark == 0
    # even a caught-up follower does not move it until the ISR is back at min ISR
    outcome = fetch(leader, 2, 100, now_ms=2)
    assert outcome.hw_update is None and outcome.propose_isr is not None
    assert leader.high_watermark == 0
    update = leader.on_isr_change_committed((1, 2), 11, now_ms=3)
    assert update == HwUpdate(0, 100)


def test_min_isr_above_replication_factor_is_capped_at_the_replication_factor():
    """KIP-966 effectiveMinIsr = min(min.insync.replicas, replication factor)."""
    leader = make_leader(replicas=(1,), min_insync_replicas=2)
    assert leader.effective_min_isr == 1
    assert leader.check_produce_admission() is None
    assert leader.on_leader_append(5, now_ms=1) == HwUpdate(0, 5)


def test_high_watermark_never_decreases():
    """Rule 3: apply only if larger, even when a maximal-ISR member reports a lower LEO."""
    leader = make_leader(replicas=(1, 2, 3), log_end_offset=10)
    fetch(leader, 2, 10, now_ms=1)
    fetch(leader, 3, 10, now_ms=1)
    assert leader.high_watermark == 10
    leader.on_leader_append(20, now_ms=2)
    outcome = fetch(leader, 3, 10, now_ms=3)
    assert outcome.hw_update is None
    assert leader.high_watermark == 10
    assert leader.maybe_increment_high_watermark(now_ms=4) is None


def test_log_start_offset_never_passes_the_high_watermark():
    """Invariant: log_start_offset <= high_watermark; retention stops at the HW."""
    leader = make_leader(replicas=(1,), min_insync_replicas=1, log_end_offset=10)
    assert leader.high_watermark == 10
    leader.advance_log_start_offset(7)
    leader.advance_log_start_offset(3)  # never moves back
    assert leader.log_start_offset == 7
    with pytest.raises(OffsetOutOfRange):
        leader.advance_log_start_offset(11)


def test_construction_refuses_an_inconsistent_partition_record():
    """The leader must be a replica and in the ISR; log_start <= HW <= LEO."""
    with pytest.raises(ValueError):
        make_leader(replicas=(1, 2, 3), isr=(2, 3))
    with pytest.raises(ValueError):
        make_leader(replicas=(1, 2), isr=(1, 2, 4))
    with pytest.raises(ValueError):
        make_leader(log_end_offset=5, high_watermark=6)


def test_replicas_state_reports_log_end_membership_and_caught_up_age():
    """replicas_state: one row per replica in assignment order, for the HTTP API."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2), log_end_offset=10, high_watermark=10)
    fetch(leader, 2, 10, now_ms=1_000)
    rows = leader.replicas_state(now_ms=1_500)
    assert rows == [
        {"broker_id": 1, "log_end_offset": 10, "in_sync": True, "caught_up_ms_ago": 0, "broker_epoch": None},
        {
            "broker_id": 2,
            "log_end_offset": 10,
            "in_sync": True,
            "caught_up_ms_ago": 500,
            "broker_epoch": registered_broker_epoch(2),
        },
        {
            "broker_id": 3,
            "log_end_offset": -1,
            "in_sync": False,
            "caught_up_ms_ago": None,
            "broker_epoch": -1,
        },
    ]
    assert LAG_MS > 500


def test_under_the_fsync_policy_the_high_watermark_waits_for_the_leaders_own_flush():
    """Followers report only what they fsynced; the leader's own log counts up to its
    flushed offset, or a power loss on the leader could take exposed records from the
    only replica left in the ISR (tests/simulation seed 404)."""
    leader = make_leader(log_end_offset=0, flush_bounds_high_watermark=True)
    leader.on_leader_append(10, now_ms=1)
    assert not leader.flush_would_raise_high_watermark(now_ms=1), "no follower holds anything yet"
    fetch(leader, 2, 10, now_ms=2)
    assert fetch(leader, 3, 10, now_ms=3).hw_update is None
    assert leader.high_watermark == 0
    assert leader.flush_would_raise_high_watermark(now_ms=3)
    assert leader.on_leader_flushed(6, now_ms=4) == HwUpdate(0, 6)
    assert leader.flush_would_raise_high_watermark(now_ms=4), "4 more offsets are held by every follower"
    assert leader.on_leader_flushed(15, now_ms=5) == HwUpdate(6, 10), "only offsets the leader knows count"
    assert leader.flushed_offset == 10
    assert not leader.flush_would_raise_high_watermark(now_ms=5)


def test_without_the_fsync_policy_the_leaders_log_end_counts_as_it_is():
    leader = make_leader(log_end_offset=0)
    leader.on_leader_append(10, now_ms=1)
    fetch(leader, 2, 10, now_ms=2)
    assert fetch(leader, 3, 10, now_ms=3).hw_update == HwUpdate(0, 10)
    assert not leader.flush_would_raise_high_watermark(now_ms=3)
