"""The one ISR-change rule the controller's compare-and-set and the simulation's controller both run."""

from __future__ import annotations

from broker.cluster.records import PartitionRecord
from broker.replication.actions import ProposeIsr
from broker.replication.isr_change import IsrChangeRefused, decide_isr_change, isr_change_refusal, with_isr_change

RECORD = PartitionRecord(
    topic="t", partition=0, leader=1, leader_epoch=4, partition_epoch=9, replicas=[1, 2, 3], isr=[1, 2]
)
REGISTERED = {1: 100, 2: 200, 3: 300}


def expand(**changes: object) -> ProposeIsr:
    fields: dict = {
        "topic": "t",
        "partition": 0,
        "leader_id": 1,
        "leader_epoch": 4,
        "partition_epoch": 9,
        "new_isr": (1, 2, 3),
        "change": "expand",
        "joining_broker_epochs": ((3, 300),),
    }
    return ProposeIsr(**{**fields, **changes})


def test_a_current_proposal_of_registered_brokers_is_taken_and_bumps_the_partition_epoch() -> None:
    assert isr_change_refusal(RECORD, expand(), REGISTERED) is None
    updated = with_isr_change(RECORD, expand())
    assert (updated.isr, updated.partition_epoch, updated.leader_epoch) == ([1, 2, 3], 10, 4)


def test_a_proposal_based_on_another_record_is_refused_naming_both() -> None:
    for stale in ({"leader_epoch": 3}, {"partition_epoch": 8}, {"leader_id": 2}):
        refusal = isr_change_refusal(RECORD, expand(**stale), REGISTERED)
        assert refusal is not None and "the record has (1, 4, 9)" in refusal, stale


def test_a_member_that_is_not_registered_cannot_be_in_the_new_isr_even_on_a_shrink() -> None:
    shrink = expand(new_isr=(1, 2), change="shrink", joining_broker_epochs=())
    assert isr_change_refusal(RECORD, shrink, {1: 100, 3: 300}) == "new ISR members [2] are not registered"
    assert isr_change_refusal(RECORD, shrink, {1: 100, 2: 200}) is None


def test_a_joiner_registered_again_since_its_fetches_qualified_it_is_refused() -> None:
    refusal = isr_change_refusal(RECORD, expand(), {**REGISTERED, 3: 310})
    assert refusal is not None and "joining replicas [3]" in refusal


def test_a_refusal_says_whether_the_record_had_moved_on_from_the_one_the_change_was_based_on() -> None:
    assert decide_isr_change(RECORD, expand(), REGISTERED) == with_isr_change(RECORD, expand())
    moved = decide_isr_change(RECORD, expand(partition_epoch=8), REGISTERED)
    assert isinstance(moved, IsrChangeRefused) and moved.record_moved
    deposed = decide_isr_change(RECORD, expand(leader_epoch=3), REGISTERED)
    assert isinstance(deposed, IsrChangeRefused) and deposed.record_moved
    ineligible = decide_isr_change(RECORD, expand(), {1: 100, 2: 200})
    assert isinstance(ineligible, IsrChangeRefused) and not ineligible.record_moved
    assert ineligible.reason == "new ISR members [3] are not registered"
