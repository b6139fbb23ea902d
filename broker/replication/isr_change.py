"""Whether the metadata takes a leader's ISR change (Kafka's AlterPartition checks: KIP-497, 841, 903).

The controller's compare-and-set (``broker.node.isr_proposals``) and the seeded
simulation's controller both decide with ``decide_isr_change``, so the rule the
simulation checks is the rule the broker runs. A change is taken only when:

- the record still has the proposing leader, its leader epoch and the partition epoch
  the proposal was based on (a deposed leader or a stale proposal never overwrites a
  newer record);
- every member of the new ISR is registered (a broker whose session is gone, or that
  never came back, cannot be in sync: KIP-841's eligible replicas);
- every replica the change adds is registered with the broker epoch whose fetches
  qualified it (KIP-903: the leader's view of the registrations may lag a restart).

A refusal says whether the record had moved on from the one the change was computed
from (``IsrChangeRefused.record_moved``), because the leader does different things:
when the record moved, the change may even have been taken by an earlier attempt whose
answer was lost, so the leader keeps counting the change's replicas in the maximal ISR
until the newer record reaches it (Kafka's ``INVALID_UPDATE_VERSION``); when the record
is the one it was based on, the change itself was refused and the leader drops it
(Kafka's ``INELIGIBLE_REPLICA``). Dropping it on a lost answer let a leader raise the HW
without a replica the controller had just added to the ISR, and elect it later without
acknowledged records (found by the seeded simulation).

Pure: the record, the proposal and the registrations in, a refusal or the new record out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from broker.cluster.records import PartitionRecord
from broker.replication.actions import ProposeIsr
from broker.replication.broker_epoch import stale_joiners


@dataclass(frozen=True, slots=True)
class IsrChangeRefused:
    """The metadata did not take an ISR change: why, and whether the record had moved on."""

    reason: str
    record_moved: bool


IsrChangeAnswer = PartitionRecord | IsrChangeRefused
"""The controller's answer to an ISR change: the record it wrote, or its refusal."""


def decide_isr_change(record: PartitionRecord, proposal: ProposeIsr, registered: Mapping[int, int]) -> IsrChangeAnswer:
    """Write ``proposal`` over ``record`` if it may be (the new record), else the refusal."""
    reason = isr_change_refusal(record, proposal, registered)
    if reason is None:
        return with_isr_change(record, proposal)
    return IsrChangeRefused(reason, record_moved=_based_on(proposal) != _current(record))


def _based_on(proposal: ProposeIsr) -> tuple[int, int, int]:
    return (proposal.leader_id, proposal.leader_epoch, proposal.partition_epoch)


def _current(record: PartitionRecord) -> tuple[int, int, int]:
    return (record.leader, record.leader_epoch, record.partition_epoch)


def isr_change_refusal(record: PartitionRecord, proposal: ProposeIsr, registered: Mapping[int, int]) -> str | None:
    """Why ``proposal`` may not be written over ``record`` (None: it may).

    ``registered`` maps each registered broker to the broker epoch of its registration;
    it must name at least every member of ``proposal.new_isr`` that is registered.
    """
    based_on, current = _based_on(proposal), _current(record)
    if based_on != current:
        return f"based on leader, leader epoch, partition epoch {based_on}, the record has {current}"
    unregistered = sorted(set(proposal.new_isr) - registered.keys())
    if unregistered:
        return f"new ISR members {unregistered} are not registered"
    stale = stale_joiners(proposal.joining_broker_epochs, registered)
    if stale:
        return f"joining replicas {stale} are no longer registered with the broker epoch that qualified them"
    return None


def with_isr_change(record: PartitionRecord, proposal: ProposeIsr) -> PartitionRecord:
    """The record after a change ``isr_change_refusal`` took: the new ISR, the next partition epoch."""
    return record.model_copy(update={"isr": list(proposal.new_isr), "partition_epoch": record.partition_epoch + 1})
