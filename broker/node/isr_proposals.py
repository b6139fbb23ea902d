"""A leader's ISR changes, written to the metadata store (Kafka's AlterPartition).

Invariant: a proposal is written only as a compare-and-set on the partition record it
was checked against (``broker.replication.isr_change``, the rule the simulation runs
too), so a deposed leader or a stale proposal can never overwrite a newer record; every
refusal is answered ``IsrChangeRefused``, and a store failure ``None``: the outcome is
unknown (the write may have been applied), so the partition asks again.

Kafka's ``AlterPartitionManager`` keeps one request in flight per broker and sends every
change queued meanwhile in the next one. ``IsrProposals`` does the same with the store:
a restarted follower of 6 700 partitions is taken back into their ISRs with up to 127
changes per transaction instead of one (each a commit, an fsync and a watch event batch).
A lone change goes out at once, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Sequence

import structlog

from broker.cluster.records import PartitionRecord, broker_key, partition_key
from broker.cluster.store import MAX_PUT_BATCH, KeyValue, MetadataStore
from broker.replication.actions import ProposeIsr
from broker.replication.isr_change import IsrChangeAnswer, IsrChangeRefused, decide_isr_change

log = structlog.get_logger(__name__)

RECORD_GONE = IsrChangeRefused("the partition record is gone", record_moved=True)
RECORD_CHANGED = IsrChangeRefused("the record changed under the compare-and-set", record_moved=True)


Queued = tuple[ProposeIsr, "asyncio.Future[IsrChangeAnswer | None]"]
"""A proposal waiting to be sent, and where its answer goes."""


class IsrProposals:
    """This broker's ISR changes, sent to the store in batches of at most ``MAX_PUT_BATCH``.

    Invariants: at most one batch is in flight; a batch names each partition at most
    once (a second change of the same partition waits for the next batch); every caller
    gets the answer to its own proposal.
    """

    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._queued: list[Queued] = []
        self._sender: asyncio.Task | None = None

    async def propose(self, proposal: ProposeIsr) -> IsrChangeAnswer | None:
        """The store's answer to ``proposal``: the record written, a refusal, or None (unknown)."""
        answer: asyncio.Future[IsrChangeAnswer | None] = asyncio.get_running_loop().create_future()
        self._queued.append((proposal, answer))
        if self._sender is None:
            self._sender = asyncio.create_task(self._send_queued(), name="isr-proposals")
        return await answer

    async def close(self) -> None:
        """Stop sending: a batch in flight is abandoned (its outcome unknown, as on a crash),
        and every proposal still waiting is cancelled."""
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        for _, answer in self._queued:
            answer.cancel()
        self._queued = []

    async def _send_queued(self) -> None:
        batch: list[Queued] = []
        try:
            while self._queued:
                batch = self._take_batch()
                answers = await _propose_all(self._store, [proposal for proposal, _ in batch])
                for (_, answer), outcome in zip(batch, answers, strict=True):
                    if not answer.done():
                        answer.set_result(outcome)
        except asyncio.CancelledError:
            for _, answer in batch:
                answer.cancel()
            raise
        finally:
            self._sender = None

    def _take_batch(self) -> list[Queued]:
        batch: list[Queued] = []
        rest: list[Queued] = []
        keys: set[tuple[str, int]] = set()
        for item in self._queued:
            key = (item[0].topic, item[0].partition)
            if len(batch) < MAX_PUT_BATCH and key not in keys:
                keys.add(key)
                batch.append(item)
            else:
                rest.append(item)
        self._queued = rest
        return batch


async def _propose_all(store: MetadataStore, proposals: Sequence[ProposeIsr]) -> list[IsrChangeAnswer | None]:
    """KIP-497 AlterPartition for many partitions: one read of their records and the
    registrations, one multi-key compare-and-set of every change taken.

    The registrations are read from the store, not the broker's view, which may lag a
    restart. When the batch write fails because a record moved meanwhile, each change
    it carried is proposed again on its own, so one busy partition costs the others
    only a second look."""
    try:
        currents = await asyncio.gather(*(store.get(partition_key(p.topic, p.partition)) for p in proposals))
        registered = await _registrations(store, {broker for p in proposals for broker in p.new_isr})
        answers: list[IsrChangeAnswer | None] = [_decide(p, kv, registered) for p, kv in zip(proposals, currents)]
    except Exception as error:  # noqa: BLE001 - a store failure leaves the outcome unknown (None)
        log.warning("isr_change.read_failed", partitions=len(proposals), error=str(error))
        return [None] * len(proposals)
    taken = [
        (i, answer, kv)
        for i, (answer, kv) in enumerate(zip(answers, currents, strict=True))
        if isinstance(answer, PartitionRecord) and kv is not None
    ]
    if not taken:
        return answers
    try:
        written = await store.put_all_if(
            [(kv.key, record.model_dump_json().encode(), kv.mod_revision) for _, record, kv in taken]
        )
    except Exception as error:  # noqa: BLE001 - the outcome of every change taken is unknown (None)
        log.warning("isr_change.write_failed", partitions=len(taken), error=str(error))
        for i, _, _ in taken:
            answers[i] = None
        return answers
    if written is None and len(taken) == 1:
        answers[taken[0][0]] = RECORD_CHANGED
    elif written is None:
        again = await asyncio.gather(*(_propose_all(store, [proposals[i]]) for i, _, _ in taken))
        for (i, _, _), (answer,) in zip(taken, again, strict=True):
            answers[i] = answer
    return answers


def _decide(proposal: ProposeIsr, current: KeyValue | None, registered: dict[int, int]) -> IsrChangeAnswer:
    if current is None:
        return RECORD_GONE
    answer = decide_isr_change(PartitionRecord.model_validate_json(current.value), proposal, registered)
    if isinstance(answer, IsrChangeRefused):
        log.warning(
            "isr_change.refused",
            topic=proposal.topic,
            partition=proposal.partition,
            leader_epoch=proposal.leader_epoch,
            partition_epoch=proposal.partition_epoch,
            new_isr=list(proposal.new_isr),
            joining_broker_epochs=dict(proposal.joining_broker_epochs),
            registered_broker_epochs={b: registered[b] for b in proposal.new_isr if b in registered},
            reason=answer.reason,
            record_moved=answer.record_moved,
        )
    return answer


async def _registrations(store: MetadataStore, broker_ids: Iterable[int]) -> dict[int, int]:
    """Broker id -> broker epoch (its registration's revision) of each of ``broker_ids`` that is registered."""
    registered = {}
    for broker_id in sorted(broker_ids):
        registration = await store.get(broker_key(broker_id))
        if registration is not None:
            registered[broker_id] = registration.mod_revision
    return registered
