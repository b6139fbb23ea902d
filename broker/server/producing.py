"""Append the records of one produce request: one batch per partition, partitions in parallel.

Shared by the single, streaming and ``records:batch`` forms of JSON produce. A request
whose records are all valid and bound for one partition is exactly one append; records
that fail on their own (bad base64, unknown partition) get their error in their slot and
do not stop the others, as the REST Proxy's batch API reports per entry.

``acks=0`` answers before the append (Kafka's fire-and-forget): the batches are
appended by background tasks the producer keeps until they finish, and ``drain`` waits
for them when the app shuts down so an accepted record is not lost to a clean stop.
Checks that need no disk (topic, partition, ``max.message.bytes``) still run first, so
even ``acks=0`` gets a 4xx for a request that can never succeed.

A delivery report's timestamp is the record's own (CreateTime): topics here have no
``message.timestamp.type=LogAppendTime``, so the append time the log notes for its
time index is not the record's timestamp and is not reported as one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog

from broker.errors import HighwaterError, RecordTooLarge
from broker.server.json_records import EncodedRecord
from broker.server.produce_plan import PartitionBatch, PlacedRecord, RoundRobin, build_batches, choose_partition

if TYPE_CHECKING:
    from broker.node import BrokerNode, ProduceResult

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Delivered:
    """Where a record went; ``offset`` is None when it was accepted with ``acks=0``."""

    partition: int
    offset: int | None
    timestamp_ms: int


Outcome = Delivered | HighwaterError


def check_batch_size(topic: str, batch: bytes, max_message_bytes: int) -> None:
    """Kafka's ``max.message.bytes`` bounds a whole batch, as on the broker side of the wire."""
    if len(batch) > max_message_bytes:
        raise RecordTooLarge(
            f"the record batch for topic {topic!r} is {len(batch)} bytes, larger than its "
            f"max.message.bytes of {max_message_bytes}",
            batch_bytes=len(batch),
            max_message_bytes=max_message_bytes,
        )


class RecordProducer:
    def __init__(self, node: BrokerNode) -> None:
        self._node = node
        self._round_robin = RoundRobin()
        self._background: set[asyncio.Task[None]] = set()

    async def produce(
        self, topic: str, records: list[EncodedRecord | HighwaterError], acks: str, timeout_ms: int
    ) -> list[Outcome]:
        """One outcome per input slot, in input order; ``UnknownTopic`` fails the whole request."""
        partition_count = self._node.partition_count(topic)
        outcomes: list[Outcome | None] = [None] * len(records)
        placed = []
        for slot, item in enumerate(records):
            if isinstance(item, HighwaterError):
                outcomes[slot] = item
                continue
            try:
                partition = choose_partition(topic, item, partition_count, self._round_robin)
            except HighwaterError as error:
                outcomes[slot] = error
                continue
            placed.append(PlacedRecord(slot, partition, item))
        batches = self._admissible(topic, build_batches(placed), outcomes)
        if acks == "0":
            for batch in batches:
                self.append_in_background(topic, batch.partition, batch.batch, timeout_ms)
                for slot, timestamp_ms in zip(batch.slots, batch.timestamps_ms):
                    outcomes[slot] = Delivered(batch.partition, None, timestamp_ms)
        else:
            results = await asyncio.gather(
                *(self._node.produce(topic, b.partition, b.batch, acks, timeout_ms) for b in batches),
                return_exceptions=True,
            )
            for batch, result in zip(batches, results):
                self._record_result(batch, result, outcomes)
        assert all(outcome is not None for outcome in outcomes)
        return outcomes  # type: ignore[return-value]

    def _admissible(
        self, topic: str, batches: list[PartitionBatch], outcomes: list[Outcome | None]
    ) -> list[PartitionBatch]:
        max_message_bytes = self._node.max_message_bytes(topic)
        admitted = []
        for batch in batches:
            try:
                check_batch_size(topic, batch.batch, max_message_bytes)
            except RecordTooLarge as error:
                for slot in batch.slots:
                    outcomes[slot] = error
                continue
            admitted.append(batch)
        return admitted

    @staticmethod
    def _record_result(
        batch: PartitionBatch,
        result: ProduceResult | BaseException,
        outcomes: list[Outcome | None],
    ) -> None:
        if isinstance(result, HighwaterError):
            for slot in batch.slots:
                outcomes[slot] = result
            return
        if isinstance(result, BaseException):
            raise result
        for index, (slot, timestamp_ms) in enumerate(zip(batch.slots, batch.timestamps_ms)):
            outcomes[slot] = Delivered(batch.partition, result.base_offset + index, timestamp_ms)

    def append_in_background(self, topic: str, partition: int, batch: bytes, timeout_ms: int) -> None:
        """Append without anyone waiting (``acks=0``); failures can only be logged."""
        task = asyncio.create_task(self._append_unacknowledged(topic, partition, batch, timeout_ms))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _append_unacknowledged(self, topic: str, partition: int, batch: bytes, timeout_ms: int) -> None:
        try:
            result = await self._node.produce(topic, partition, batch, "0", timeout_ms)
        except HighwaterError as error:
            log.warning(
                "produce.acks0_failed", topic=topic, partition=partition, error=error.name, message=error.message
            )
            return
        except Exception:
            log.exception("produce.acks0_crashed", topic=topic, partition=partition)
            return
        log.debug("produce.acks0_appended", topic=topic, partition=partition, base_offset=result.base_offset)

    async def drain(self) -> None:
        """Wait for every ``acks=0`` append still running."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
