"""A leader's ISR changes, written to the metadata store (Kafka's AlterPartition).

Invariant: a proposal is written only as a compare-and-set on the partition record it
was checked against (``broker.replication.isr_change``, the rule the simulation runs
too), so a deposed leader or a stale proposal can never overwrite a newer record; every
refusal is answered ``IsrChangeRefused``, and a store failure ``None``: the outcome is
unknown (the write may have been applied), so the partition asks again.
"""

from __future__ import annotations

import structlog

from broker.cluster.records import PartitionRecord, broker_key, partition_key
from broker.cluster.store import MetadataStore
from broker.replication.actions import ProposeIsr
from broker.replication.isr_change import IsrChangeAnswer, IsrChangeRefused, decide_isr_change

log = structlog.get_logger(__name__)


async def propose_isr(store: MetadataStore, proposal: ProposeIsr) -> IsrChangeAnswer | None:
    """KIP-497 AlterPartition as a compare-and-set on the partition record.

    The registrations are read from the store, not the broker's view, which may lag a
    restart; the record is written only if no other write reached it since it was read.
    """
    key = partition_key(proposal.topic, proposal.partition)
    try:
        current = await store.get(key)
        if current is None:
            return IsrChangeRefused("the partition record is gone", record_moved=True)
        record = PartitionRecord.model_validate_json(current.value)
        registered = await _registrations(store, proposal.new_isr)
        answer = decide_isr_change(record, proposal, registered)
        if isinstance(answer, IsrChangeRefused):
            log.warning(
                "isr_change.refused",
                topic=proposal.topic,
                partition=proposal.partition,
                leader_epoch=proposal.leader_epoch,
                partition_epoch=proposal.partition_epoch,
                new_isr=list(proposal.new_isr),
                joining_broker_epochs=dict(proposal.joining_broker_epochs),
                registered_broker_epochs=registered,
                reason=answer.reason,
                record_moved=answer.record_moved,
            )
            return answer
        if await store.put_if(key, answer.model_dump_json().encode(), current.mod_revision) is None:
            return IsrChangeRefused("the record changed under the compare-and-set", record_moved=True)
        return answer
    except Exception as error:  # noqa: BLE001 - a store failure leaves the outcome unknown (None)
        log.warning("isr_change.write_failed", topic=proposal.topic, partition=proposal.partition, error=str(error))
        return None


async def _registrations(store: MetadataStore, broker_ids: tuple[int, ...]) -> dict[int, int]:
    """Broker id -> broker epoch (its registration's revision) of each of ``broker_ids`` that is registered."""
    registered = {}
    for broker_id in broker_ids:
        registration = await store.get(broker_key(broker_id))
        if registration is not None:
            registered[broker_id] = registration.mod_revision
    return registered
