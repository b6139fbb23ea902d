"""A repeated session fetch recorded in O(1) ends exactly where the full path would, or is declined."""

from __future__ import annotations

import copy
import random

import pytest

from broker.replication import PartitionLeaderState
from tests.unit.replication.factories import fetch, make_leader, registered_broker_epoch


def _repeat(leader: PartitionLeaderState, replica_id: int, fetch_offset: int, now_ms: int, **overrides) -> bool:
    arguments = {
        "current_leader_epoch": leader.leader_epoch,
        "broker_epoch": registered_broker_epoch(replica_id),
        "registered_broker_epoch": registered_broker_epoch(replica_id),
        **overrides,
    }
    return leader.on_repeated_follower_fetch(replica_id, fetch_offset, now_ms, **arguments)


def _state(leader: PartitionLeaderState) -> tuple:
    return (
        copy.deepcopy(leader._followers),
        leader.high_watermark,
        leader.isr,
        leader.pending_isr_change,
        leader.log_start_offset,
    )


def _caught_up_leader() -> PartitionLeaderState:
    leader = make_leader(log_end_offset=0)
    leader.on_leader_append(10, now_ms=1)
    fetch(leader, 2, 10, now_ms=2)
    fetch(leader, 3, 10, now_ms=3)
    return leader


def test_a_repeated_fetch_of_an_in_sync_follower_updates_only_its_fetch_times() -> None:
    leader = _caught_up_leader()
    assert _repeat(leader, 2, 10, now_ms=500)
    state = leader._followers[2]
    assert (state.log_end_offset, state.last_fetch_time_ms, state.last_caught_up_time_ms) == (10, 500, 500)
    assert leader.high_watermark == 10


@pytest.mark.parametrize(
    ("replica_id", "offset", "overrides", "why"),
    [
        (2, 9, {}, "an offset other than the recorded LEO"),
        (2, 10, {"current_leader_epoch": 4}, "an older leader epoch (the full path fences it)"),
        (2, 10, {"broker_epoch": 999, "registered_broker_epoch": 999}, "a new incarnation"),
        (2, 10, {"registered_broker_epoch": 999}, "an incarnation no longer registered"),
        (4, 10, {}, "a broker that is no replica"),
    ],
)
def test_the_fast_path_declines_what_the_full_path_must_judge(replica_id, offset, overrides, why) -> None:
    leader = _caught_up_leader()
    before = _state(leader)
    assert not _repeat(leader, replica_id, offset, now_ms=500, **overrides), why
    assert _state(leader) == before


def test_the_fast_path_declines_while_a_follower_is_out_of_the_isr_or_a_change_is_in_flight() -> None:
    out = make_leader(isr=(1, 2), log_end_offset=10)
    fetch(out, 2, 10, now_ms=1)
    assert not _repeat(out, 2, 10, now_ms=2), "broker 3 out of the ISR: the HW may depend on its catch-up time"
    pending = _caught_up_leader()
    pending.on_leader_append(20, now_ms=4)
    fetch(pending, 2, 20, now_ms=5)
    assert pending.check_isr_shrink(now_ms=100_000) is not None, "broker 3 fell behind: its removal is in flight"
    assert not _repeat(pending, 2, 20, now_ms=100_001)


@pytest.mark.parametrize("seed", range(30))
def test_wherever_the_fast_path_records_it_matches_the_full_path(seed: int) -> None:
    """Random appends, fetches, flushes, shrinks and ISR commits; at each step a repeated fetch both ways."""
    rng = random.Random(seed)
    leader = make_leader(log_end_offset=0, flush_bounds_high_watermark=rng.random() < 0.5)
    now = 0
    recorded = 0
    for _ in range(300):
        now += rng.choice([1, 5, 50, 4_000])
        event = rng.random()
        if event < 0.3:
            leader.on_leader_append(leader.log_end_offset + rng.randint(1, 5), now_ms=now)
        elif event < 0.4:
            leader.on_leader_flushed(leader.log_end_offset, now_ms=now)
        elif event < 0.75:
            replica_id = rng.choice([2, 3])
            fetch(leader, replica_id, rng.randint(leader.high_watermark, leader.log_end_offset), now_ms=now)
        elif event < 0.85:
            proposal = leader.check_isr_shrink(now_ms=now)
            if proposal is not None and rng.random() < 0.8:
                leader.on_isr_change_committed(proposal.new_isr, proposal.partition_epoch, now_ms=now)
        elif leader.pending_isr_change is not None:
            change = leader.pending_isr_change
            leader.on_isr_change_committed(sorted(change.new_isr), change.based_on_partition_epoch + 1, now_ms=now)
        replica_id = rng.choice([2, 3])
        offset = leader._followers[replica_id].log_end_offset
        fast, full = copy.deepcopy(leader), copy.deepcopy(leader)
        if not _repeat(fast, replica_id, offset, now_ms=now):
            assert _state(fast) == _state(leader)
            continue
        recorded += 1
        outcome = fetch(full, replica_id, offset, now_ms=now)
        assert outcome.error is None and outcome.diverging_epoch is None
        assert outcome.hw_update is None and outcome.propose_isr is None
        assert _state(fast) == _state(full)
    assert recorded > 0, "the walk never reached a state the fast path takes"
