"""Partition leader election and ISR changes made by the controller (Kafka's
``PartitionChangeBuilder``), as pure functions from a ``PartitionRecord`` to its
successor.

Rules, in the order Kafka applies them:

* The current leader stays while it is alive and in the ISR (no needless epoch bump).
* Otherwise the new leader is the first replica, in assignment order, that is in the
  ISR and alive: every ISR member holds every committed record, so a clean election
  loses nothing.
* If no ISR member is alive the partition has no leader (``leader = -1``) and the ISR
  is left as it is, so the last in-sync member can lead again when it returns.
* Only when ``unclean.leader.election.enable`` is set may the first live replica
  outside the ISR lead; its ISR becomes just itself and the change is flagged
  ``unclean`` (records committed by the lost ISR may be gone).
* The ISR is never emptied: removing its last member sets ``leader = -1`` instead
  (Kafka before KIP-966's ELR), for the same reason as above.

Epochs: every leader change bumps ``leader_epoch`` (followers and clients fence on
it); every change of the record bumps ``partition_epoch`` (leaders' ISR updates fence
on it, KIP-497). A function returns ``None`` when nothing would change, so a caller
never writes, and never bumps an epoch, for nothing.

Invariants kept: ``isr`` is a non-empty subset of ``replicas`` in its previous order;
``leader`` is in ``isr`` or is -1; epochs never decrease.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from broker.cluster.records import NO_LEADER, PartitionRecord


@dataclass(frozen=True, slots=True)
class PartitionChange:
    """``previous`` -> ``record``, and whether the new leader was elected uncleanly
    (outside the ISR: possible data loss, to be logged loudly)."""

    previous: PartitionRecord
    record: PartitionRecord
    unclean: bool = False

    @property
    def leader_changed(self) -> bool:
        return self.record.leader != self.previous.leader


def elect_leader(
    record: PartitionRecord, live_broker_ids: Collection[int], unclean_leader_election_enable: bool
) -> PartitionChange | None:
    """Keep a live in-ISR leader, else elect one per the module rules."""
    leader, isr, unclean = choose_leader(record, record.isr, live_broker_ids, unclean_leader_election_enable)
    return _change(record, leader, isr, unclean)


def reconcile(
    record: PartitionRecord, live_broker_ids: Collection[int], unclean_leader_election_enable: bool
) -> PartitionChange | None:
    """Bring the record in line with the live brokers: drop dead brokers from the ISR
    (never emptying it), then elect a leader if needed.

    Idempotent, and independent of the order brokers died in, so a new controller can
    apply it to every partition without knowing what happened while nobody ruled.
    When every ISR member is dead the member kept is the last leader if it was in the
    ISR (it surely holds every committed record), else the first ISR member.
    """
    live = set(live_broker_ids)
    isr = [broker_id for broker_id in record.isr if broker_id in live]
    if not isr:
        isr = [record.leader] if record.leader in record.isr else record.isr[:1]
    leader, isr, unclean = choose_leader(record, isr, live, unclean_leader_election_enable)
    return _change(record, leader, isr, unclean)


def remove_from_isr(record: PartitionRecord, broker_id: int) -> PartitionChange | None:
    """Drop ``broker_id`` from the ISR. The last ISR member stays (leader becomes -1);
    a removed leader leaves the partition leaderless until ``elect_leader`` runs."""
    if broker_id not in record.isr:
        return None
    if record.isr == [broker_id]:
        return _change(record, NO_LEADER, record.isr, False)
    isr = [member for member in record.isr if member != broker_id]
    leader = NO_LEADER if record.leader == broker_id else record.leader
    return _change(record, leader, isr, False)


def preferred_leader_election(record: PartitionRecord, live_broker_ids: Collection[int]) -> PartitionChange | None:
    """Move leadership to ``replicas[0]`` if it is alive, in the ISR and not leading."""
    preferred = record.replicas[0]
    if record.leader == preferred or preferred not in live_broker_ids or preferred not in record.isr:
        return None
    return _change(record, preferred, record.isr, False)


def controlled_shutdown_move(
    record: PartitionRecord, broker_id: int, live_broker_ids: Collection[int]
) -> PartitionChange | None:
    """Prepare ``broker_id``'s shutdown: move its leadership to the first live ISR member
    in assignment order and drop it from the ISR when other ISR members remain.

    When it is the only ISR member the ISR keeps it and the partition becomes
    leaderless (KRaft's controlled shutdown does the same): it stays unavailable
    while the broker is down either way, and it can lead again when it returns.
    Never unclean: an orderly shutdown is no reason to risk data loss.
    """
    if broker_id not in record.replicas:
        return None
    live = set(live_broker_ids) - {broker_id}
    isr = record.isr
    if broker_id in isr and len(isr) > 1:
        isr = [member for member in isr if member != broker_id]
    if record.leader == broker_id:
        leader, isr, _ = choose_leader(record, isr, live, False)
    else:
        leader = record.leader
    return _change(record, leader, isr, False)


def choose_leader(
    record: PartitionRecord, isr: list[int], live: Collection[int], unclean_enabled: bool
) -> tuple[int, list[int], bool]:
    """(leader, isr, unclean) per the module rules, for the given candidate ISR."""
    if record.leader in live and record.leader in isr:
        return record.leader, isr, False
    for replica in record.replicas:
        if replica in isr and replica in live:
            return replica, isr, False
    if unclean_enabled:
        for replica in record.replicas:
            if replica in live:
                return replica, [replica], True
    return NO_LEADER, isr, False


def _change(record: PartitionRecord, leader: int, isr: list[int], unclean: bool) -> PartitionChange | None:
    return changed(record, record.model_copy(update={"leader": leader, "isr": list(isr)}), unclean)


def changed(previous: PartitionRecord, successor: PartitionRecord, unclean: bool = False) -> PartitionChange | None:
    """``previous`` -> ``successor`` with the epochs stamped (every change bumps ``partition_epoch``, a
    leader change ``leader_epoch`` too); ``None`` when ``successor`` changes nothing. Every decision
    about a record, here and in ``broker.cluster.reassignment``, ends here."""
    if successor == previous:
        return None
    stamped = successor.model_copy(
        update={
            "leader_epoch": previous.leader_epoch + (successor.leader != previous.leader),
            "partition_epoch": previous.partition_epoch + 1,
        }
    )
    return PartitionChange(previous=previous, record=stamped, unclean=unclean)
