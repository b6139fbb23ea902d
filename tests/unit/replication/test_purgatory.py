"""acks=all waits (DelayedProduce, Partition.checkEnoughReplicasReachOffset)."""

from typing import cast

import pytest

from broker.errors import (
    NotEnoughReplicasAfterAppend,
    NotLeaderOrFollower,
    RequestTimedOut,
)
from broker.replication import DelayedProducePurgatory, ProduceCompletion
from tests.unit.replication.factories import fetch, make_leader


def test_success_once_the_high_watermark_passes_the_batch():
    """Success when HW >= last offset + 1 and the maximal ISR >= min ISR (invariant 5)."""
    purgatory = DelayedProducePurgatory("orders", 0)
    purgatory.add("p1", required_offset=10, deadline_ms=30_000)
    purgatory.add("p2", required_offset=20, deadline_ms=30_000)
    assert purgatory.on_high_watermark(9, maximal_isr_size=3, min_insync_replicas=2) == []
    assert purgatory.on_high_watermark(15, maximal_isr_size=3, min_insync_replicas=2) == [ProduceCompletion("p1", None)]
    assert len(purgatory) == 1


def test_not_enough_replicas_after_append_when_the_isr_shrank_below_min():
    """HW passed the batch but the maximal ISR < min ISR -> AFTER_APPEND, outcome unknown."""
    purgatory = DelayedProducePurgatory("orders", 0)
    purgatory.add("p1", required_offset=10, deadline_ms=30_000)
    [(request_id, error)] = purgatory.on_high_watermark(10, maximal_isr_size=1, min_insync_replicas=2)
    assert request_id == "p1"
    assert isinstance(error, NotEnoughReplicasAfterAppend)
    assert "outcome is unknown" in error.message


def test_timeout_when_the_high_watermark_never_arrives():
    """Deadline passes first -> REQUEST_TIMED_OUT; later HW rises complete nothing."""
    purgatory = DelayedProducePurgatory("orders", 0)
    purgatory.add("p1", required_offset=10, deadline_ms=1_000)
    purgatory.add("p2", required_offset=10, deadline_ms=2_000)
    assert purgatory.next_deadline_ms() == 1_000
    assert purgatory.expire(999) == []
    [(request_id, error)] = purgatory.expire(1_000)
    assert request_id == "p1" and isinstance(error, RequestTimedOut)
    assert purgatory.next_deadline_ms() == 2_000
    assert [c.request_id for c in purgatory.on_high_watermark(10, 3, 2)] == ["p2"]
    assert purgatory.next_deadline_ms() is None
    assert purgatory.expire(10_000) == []


def test_losing_leadership_fails_every_waiter_with_not_leader():
    """Leadership lost during the wait -> NOT_LEADER_OR_FOLLOWER (scenario 13)."""
    purgatory = DelayedProducePurgatory("orders", 0)
    purgatory.add("p1", 10, 1_000)
    purgatory.add("p2", 12, 1_000)
    completions = purgatory.fail_all_not_leader(leader_id=2)
    assert sorted(cast(str, c.request_id) for c in completions) == ["p1", "p2"]
    assert all(isinstance(c.error, NotLeaderOrFollower) for c in completions)
    assert completions[0].error is not None
    assert completions[0].error.details["leader_id"] == 2
    assert len(purgatory) == 0 and purgatory.on_high_watermark(100, 3, 2) == []


def test_a_request_id_can_wait_again_after_it_completed():
    """Stale heap entries of a completed wait never complete a newer one."""
    purgatory = DelayedProducePurgatory("orders", 0)
    purgatory.add("p1", 10, 1_000)
    assert purgatory.on_high_watermark(10, 3, 2) == [ProduceCompletion("p1", None)]
    purgatory.add("p1", 20, 5_000)
    assert purgatory.expire(1_000) == []
    assert purgatory.next_deadline_ms() == 5_000
    with pytest.raises(ValueError):
        purgatory.add("p1", 30, 5_000)


def test_acks_all_end_to_end_with_the_leader_state():
    """A produce waits until both followers fetch past it; success with ISR 3 >= 2."""
    leader = make_leader(replicas=(1, 2, 3), min_insync_replicas=2, log_end_offset=0)
    purgatory = DelayedProducePurgatory("orders", 0)
    assert leader.check_produce_admission() is None
    leader.on_leader_append(5, now_ms=1)
    purgatory.add("p1", required_offset=5, deadline_ms=30_000)
    fetch(leader, 2, 5, now_ms=2)
    assert purgatory.on_high_watermark(leader.high_watermark, len(leader.maximal_isr), leader.effective_min_isr) == []
    update = fetch(leader, 3, 5, now_ms=3).hw_update
    assert update is not None
    assert purgatory.on_high_watermark(
        update.new_high_watermark, len(leader.maximal_isr), leader.effective_min_isr
    ) == [ProduceCompletion("p1", None)]
