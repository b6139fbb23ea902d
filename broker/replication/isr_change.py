"""Whether the metadata takes a leader's ISR change (Kafka's AlterPartition checks: KIP-497, 841, 903).

The controller's compare-and-set (``broker.node.isr_proposals``) and the seeded
simulation's controller both decide with ``isr_change_refusal``, so the rule the
simulation checks is the rule the broker runs. A change is taken only when:

- the record still has the proposing leader, its leader epoch and the partition epoch
  the proposal was based on (a deposed leader or a stale proposal never overwrites a
  newer record);
- every member of the new ISR is registered (a broker whose session is gone, or that
  never came back, cannot be in sync: KIP-841's eligible replicas);
- every replica the change adds is registered with the broker epoch whose fetches
  qualified it (KIP-903: the leader's view of the registrations may lag a restart).

Pure: the record, the proposal and the registrations in, a reason or the new record out.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.cluster.records import PartitionRecord
from broker.replication.actions import ProposeIsr
from broker.replication.broker_epoch import stale_joiners


def isr_change_refusal(record: PartitionRecord, proposal: ProposeIsr, registered: Mapping[int, int]) -> str | None:
    """Why ``proposal`` may not be written over ``record`` (None: it may).

    ``registered`` maps each registered broker to the broker epoch of its registration;
    it must name at least every member of ``proposal.new_isr`` that is registered.
    """
    based_on = (proposal.leader_id, proposal.leader_epoch, proposal.partition_epoch)
    current = (record.leader, record.leader_epoch, record.partition_epoch)
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
