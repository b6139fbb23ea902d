"""Reassignment's record changes (KIP-455): target ∪ original while moving, completion once the target is in sync,
for targets of the original's length and of others (a change of the partition's replication factor)."""

from __future__ import annotations

import pytest

from broker.cluster.election import PartitionChange
from broker.cluster.reassignment import (
    check_target,
    complete,
    is_moving,
    moves_to_check,
    original_replicas,
    reassign,
    settled_replica_count,
    target_replicas,
)
from broker.cluster.records import PartitionRecord
from broker.errors import InvalidReplicaAssignment

ALL = {1, 2, 3, 4, 5}


def written(change: PartitionChange | None) -> PartitionRecord:
    assert change is not None, "a change was expected"
    return change.record


def record(replicas: list[int], isr: list[int] | None = None, leader: int | None = None, **moving) -> PartitionRecord:
    isr = list(replicas) if isr is None else isr
    return PartitionRecord(
        topic="t",
        partition=0,
        leader=isr[0] if leader is None else leader,
        leader_epoch=5,
        partition_epoch=9,
        replicas=replicas,
        isr=isr,
        **moving,
    )


def test_a_move_to_a_new_broker_keeps_the_original_replicas_until_the_new_one_is_in_sync():
    moved = written(reassign(record([1, 2, 3]), [2, 3, 4], ALL))
    assert (moved.replicas, moved.adding_replicas, moved.removing_replicas) == ([2, 3, 4, 1], [4], [1])
    assert (moved.isr, moved.leader, moved.leader_epoch, moved.partition_epoch) == ([1, 2, 3], 1, 5, 10)
    assert (original_replicas(moved), target_replicas(moved), is_moving(moved)) == ([2, 3, 1], [2, 3, 4], True)


def test_nothing_completes_before_every_target_replica_is_in_the_isr():
    moving = written(reassign(record([1, 2, 3]), [2, 3, 4], ALL))
    assert complete(moving, ALL) is None


def test_completion_drops_the_leaving_replicas_and_moves_a_leaving_leader_to_the_target_order():
    moving = written(reassign(record([1, 2, 3]), [3, 2, 4], ALL))
    caught_up = moving.model_copy(update={"isr": [1, 2, 3, 4]})
    done = written(complete(caught_up, ALL))
    assert (done.replicas, done.isr, done.adding_replicas, done.removing_replicas) == ([3, 2, 4], [2, 3, 4], [], [])
    assert (done.leader, done.leader_epoch, done.partition_epoch) == (3, 6, caught_up.partition_epoch + 1)


def test_a_leader_that_stays_keeps_leading_and_its_epoch():
    moving = written(reassign(record([2, 1, 3], leader=2), [2, 3, 4], ALL))
    done = written(complete(moving.model_copy(update={"isr": [2, 1, 3, 4]}), ALL))
    assert (done.leader, done.leader_epoch, done.isr) == (2, 5, [2, 3, 4])


def test_a_dead_target_replica_is_not_elected_at_completion():
    moving = written(reassign(record([1, 2, 3]), [4, 2, 3], ALL))
    done = written(complete(moving.model_copy(update={"isr": [1, 2, 3, 4]}), {2, 3, 4} - {4}))
    assert done.leader == 2


def test_a_move_that_only_reorders_or_removes_replicas_completes_at_once():
    reordered = written(reassign(record([1, 2, 3]), [2, 3, 1], ALL))
    assert (reordered.replicas, reordered.leader, is_moving(reordered)) == ([2, 3, 1], 1, False)
    shrink = written(reassign(record([1, 2, 3, 4]), [2, 3, 4], ALL))
    assert (shrink.replicas, shrink.isr, shrink.leader, shrink.leader_epoch) == ([2, 3, 4], [2, 3, 4], 2, 6)


def test_the_same_replicas_are_no_change_at_all():
    assert reassign(record([1, 2, 3]), [1, 2, 3], ALL) is None


def test_a_new_target_during_a_move_is_measured_from_the_original_and_drops_the_abandoned_copy():
    moving = written(reassign(record([1, 2, 3]), [2, 3, 4], ALL))
    moving = moving.model_copy(update={"isr": [1, 2, 3, 4]})
    again = written(reassign(moving, [2, 3, 5], ALL))
    assert (again.replicas, again.adding_replicas, again.removing_replicas, again.isr) == (
        [2, 3, 5, 1],
        [5],
        [1],
        [1, 2, 3],
    )


def test_the_original_replicas_as_target_cancel_the_move_in_the_order_the_move_left_them():
    moving = written(reassign(record([1, 2, 3]), [2, 3, 4], ALL))
    cancelled = written(reassign(moving, original_replicas(moving), ALL))
    assert (cancelled.replicas, cancelled.adding_replicas, cancelled.removing_replicas) == ([2, 3, 1], [], [])
    assert (cancelled.isr, cancelled.leader) == ([1, 2, 3], 1)


def test_a_change_that_would_leave_no_in_sync_replica_is_refused():
    moving = written(reassign(record([1, 2, 3]), [4, 2, 3], ALL))
    only_new_in_sync = moving.model_copy(update={"isr": [4], "leader": 4})
    with pytest.raises(InvalidReplicaAssignment, match=r"in-sync replicas \[4\] are all left out"):
        reassign(only_new_in_sync, [1, 2, 3], ALL)


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ([], "names no broker"),
        ([1, 1, 2], "broker 1 more than once"),
        ([1, 2, 9], r"broker 9 is not a live broker \(live: 1, 2, 3, 4, 5\)"),
        ([4], r"t-0: the target names 1 broker\(s\) but topic 't' needs 2 in sync for acks=all"),
    ],
)
def test_a_target_that_cannot_be_is_refused_naming_why(target: list[int], message: str):
    with pytest.raises(InvalidReplicaAssignment, match=message):
        check_target(record([1, 2, 3]), target, 2, ALL)


def test_a_replica_on_a_dead_broker_may_stay_but_none_may_move_to_one():
    """Broker 3 is down: draining broker 1 onto 4 keeps 3's replica, and the move waits for 3 to be in sync."""
    down = record([1, 2, 3], isr=[1, 2])
    alive = ALL - {3}
    check_target(down, [4, 2, 3], 2, alive)
    with pytest.raises(InvalidReplicaAssignment, match="broker 5 is not a live broker"):
        check_target(down, [4, 2, 5], 2, alive - {5})
    moving = written(reassign(down, [4, 2, 3], alive))
    assert (moving.adding_replicas, moving.removing_replicas, moving.isr) == ([4], [1], [1, 2])
    assert complete(moving.model_copy(update={"isr": [1, 2, 4]}), alive) is None, "3 is not back in sync yet"
    done = written(complete(moving.model_copy(update={"isr": [1, 2, 4, 3]}), ALL))
    assert (done.replicas, sorted(done.isr)) == ([4, 2, 3], [2, 3, 4])


@pytest.mark.parametrize("target", [[1, 2, 3, 4], [2, 4], [5, 4, 3, 2, 1]])
def test_a_target_of_another_length_than_the_original_is_accepted(target: list[int]):
    check_target(record([1, 2, 3]), target, 2, ALL)


def test_a_larger_target_only_adds_and_completes_once_the_added_replica_is_in_sync():
    moving = written(reassign(record([1, 2, 3]), [1, 2, 3, 4], ALL))
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == ([1, 2, 3, 4], [4], [])
    assert (moving.isr, moving.leader, original_replicas(moving)) == ([1, 2, 3], 1, [1, 2, 3])
    assert complete(moving, ALL) is None
    done = written(complete(moving.model_copy(update={"isr": [1, 2, 3, 4]}), ALL))
    assert (done.replicas, done.isr, is_moving(done)) == ([1, 2, 3, 4], [1, 2, 3, 4], False)
    assert (done.leader, done.leader_epoch) == (1, 5)


def test_a_smaller_target_in_sync_completes_at_once_and_a_removed_leader_hands_over():
    shrunk = written(reassign(record([1, 2, 3], leader=3), [1, 2], ALL))
    assert (shrunk.replicas, shrunk.isr, is_moving(shrunk)) == ([1, 2], [1, 2], False)
    assert (shrunk.leader, shrunk.leader_epoch, shrunk.partition_epoch) == (1, 6, 10)


def test_a_smaller_target_waits_for_the_replicas_it_keeps_to_be_in_sync():
    shrinking = written(reassign(record([1, 2, 3], isr=[3, 1], leader=3), [1, 2], ALL))
    assert (shrinking.replicas, shrinking.adding_replicas, shrinking.removing_replicas) == ([1, 2, 3], [], [3])
    assert (shrinking.isr, shrinking.leader, target_replicas(shrinking)) == ([3, 1], 3, [1, 2])
    assert complete(shrinking, ALL) is None
    done = written(complete(shrinking.model_copy(update={"isr": [3, 1, 2]}), ALL))
    assert (done.replicas, done.isr, done.leader, done.leader_epoch) == ([1, 2], [1, 2], 1, 6)


def test_a_target_that_grows_and_replaces_at_once_needs_every_target_replica_in_sync():
    moving = written(reassign(record([1, 2]), [3, 4, 1], ALL))
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == ([3, 4, 1, 2], [3, 4], [2])
    assert (original_replicas(moving), target_replicas(moving)) == ([1, 2], [3, 4, 1])
    assert complete(moving.model_copy(update={"isr": [1, 2, 3]}), ALL) is None
    done = written(complete(moving.model_copy(update={"isr": [1, 2, 3, 4]}), ALL))
    assert (done.replicas, done.isr, done.leader, done.leader_epoch) == ([3, 4, 1], [1, 3, 4], 1, 5)


@pytest.mark.parametrize(
    ("original", "isr", "target", "back"),
    [
        ([1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3]),
        ([1, 2, 3], [1, 3], [1, 2], [1, 2, 3]),
        ([1, 2], [1, 2, 3], [3, 4, 1], [1, 2]),
    ],
)
def test_cancelling_a_move_of_another_length_returns_to_the_original_and_drops_the_copies(
    original: list[int], isr: list[int], target: list[int], back: list[int]
):
    moving = written(reassign(record(original, isr=[m for m in isr if m in original]), target, ALL))
    caught_up = moving.model_copy(update={"isr": [m for m in isr if m in moving.replicas]})
    assert is_moving(caught_up)
    cancelled = written(reassign(caught_up, original_replicas(caught_up), ALL))
    assert (sorted(cancelled.replicas), cancelled.adding_replicas, cancelled.removing_replicas) == (back, [], [])
    assert set(cancelled.isr) <= set(back) and cancelled.leader in cancelled.isr


def test_a_topic_settles_on_a_replica_count_only_when_every_partition_holds_it_and_none_moves():
    three, two = record([1, 2, 3]), record([1, 2]).model_copy(update={"partition": 1})
    assert settled_replica_count(2, [three, three.model_copy(update={"partition": 1})]) == 3
    assert settled_replica_count(2, [three, two]) is None, "counts differ"
    assert settled_replica_count(2, [three]) is None, "partition 1 is missing"
    growing = written(reassign(two, [1, 2, 3], ALL))
    assert settled_replica_count(2, [three, growing]) is None, "partition 1 moves"


def test_a_move_is_not_forgotten_while_the_view_still_holds_the_record_before_it():
    """The controller's view may lag its own write: the pre-move record (not moving) must not end the move."""
    before = record([1, 2, 3])
    moving = written(reassign(before, [2, 3, 4], ALL))
    started = {"k": moving.partition_epoch}
    assert moves_to_check(started, {"k": before}) == ([], [])
    assert moves_to_check(started, {"k": moving}) == (["k"], [])


def test_a_finished_cancelled_or_deleted_move_is_forgotten():
    moving = written(reassign(record([1, 2, 3]), [2, 3, 4], ALL))
    done = written(complete(moving.model_copy(update={"isr": [1, 2, 3, 4]}), ALL))
    started = {"done": moving.partition_epoch, "gone": 4}
    assert moves_to_check(started, {"done": done, "gone": None}) == ([], ["done", "gone"])
