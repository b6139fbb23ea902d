"""A leader's ISR changes, written to the metadata store (Kafka's AlterPartition).

Invariant: a proposal is written only as a compare-and-set on the partition record
it was based on, so a deposed leader or a stale proposal can never overwrite a newer
record; every refusal, store failures included, is answered ``None``.
"""

from __future__ import annotations

import structlog

from broker.cluster.records import PartitionRecord, broker_key, partition_key
from broker.cluster.store import MetadataStore
from broker.replication.actions import ProposeIsr
from broker.replication.broker_epoch import stale_joiners

log = structlog.get_logger(__name__)


async def propose_isr(store: MetadataStore, proposal: ProposeIsr) -> PartitionRecord | None:
    """KIP-497 AlterPartition as a compare-and-set on the partition record.

    Refused (None) unless the stored record still has this leader, its leader
    epoch and the partition epoch the proposal was based on.
    """
    key = partition_key(proposal.topic, proposal.partition)
    try:
        if not await _joiners_registered(store, proposal):
            return None
        current = await store.get(key)
        if current is None:
            return None
        record = PartitionRecord.model_validate_json(current.value)
        if (record.leader, record.leader_epoch, record.partition_epoch) != (
            proposal.leader_id,
            proposal.leader_epoch,
            proposal.partition_epoch,
        ):
            return None
        updated = record.model_copy(
            update={"isr": list(proposal.new_isr), "partition_epoch": record.partition_epoch + 1}
        )
        if await store.put_if(key, updated.model_dump_json().encode(), current.mod_revision) is None:
            return None
        return updated
    except Exception as error:  # noqa: BLE001 - a store failure is a refused proposal (None)
        log.warning("isr_change.write_failed", topic=proposal.topic, partition=proposal.partition, error=str(error))
        return None


async def _joiners_registered(store: MetadataStore, proposal: ProposeIsr) -> bool:
    """KIP-903 on the ISR write: every replica an expansion adds must still be registered
    with the broker epoch whose fetches qualified it (read from the store, not the view,
    which may lag a restart)."""
    registered = {}
    for broker_id, _ in proposal.joining_broker_epochs:
        registration = await store.get(broker_key(broker_id))
        if registration is not None:
            registered[broker_id] = registration.mod_revision
    stale = stale_joiners(proposal.joining_broker_epochs, registered)
    if stale:
        log.warning(
            "isr_change.ineligible_replica",
            topic=proposal.topic,
            partition=proposal.partition,
            leader_epoch=proposal.leader_epoch,
            partition_epoch=proposal.partition_epoch,
            joining_broker_epochs=dict(proposal.joining_broker_epochs),
            registered_broker_epochs=registered,
            stale=stale,
        )
    return not stale
