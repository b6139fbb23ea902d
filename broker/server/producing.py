"""Append the records of one produce request: partitions in parallel, each partition's batches in order.

Shared by the single, streaming and ``records:batch`` forms of JSON produce. A
partition's records become as few batches as its ``max.message.bytes`` allows
(``produce_plan.build_batches``), so a request whose records are valid, bound for one
partition and small enough together is exactly one append. Records that fail on their
own (bad base64, unknown partition, one record larger than ``max.message.bytes``) get
their error in their slot and do not stop the others, as the REST Proxy's batch API
reports per entry.

``acks=0`` answers before the append (Kafka's fire-and-forget): the batches are
appended by background tasks the producer keeps until they finish, and ``drain`` waits
for them when the app shuts down so an accepted record is not lost to a clean stop.
Checks that need no disk (topic, partition, ``max.message.bytes``) still run first, so
even ``acks=0`` gets a 4xx for a request that can never succeed.

A delivery report's timestamp is the record's own (CreateTime): topics here have no
``message.timestamp.type=LogAppendTime``, so the append time the log notes for its
time index is not the record's timestamp and is not reported as one. It is written as
the REST Proxy writes it, an RFC 3339 date-time in UTC (``timestamp``), and as the
milliseconds the record carries (``timestamp_ms``), which is exact where a date-time
cannot be: past the year 9999 ``timestamp`` is null.
"""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from broker.acks import Acks
from broker.errors import HighwaterError, RecordTooLarge
from broker.server.json_records import EncodedRecord, size_report
from broker.server.produce_plan import PartitionBatch, PlacedRecord, RoundRobin, build_batches, choose_partition
from broker.storage.log import CheckedBatches
from broker.topics.policy import check_client_append

if TYPE_CHECKING:
    from broker.server.host import HttpHost

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Delivered:
    """Where a record went; ``offset`` is None when it was accepted with ``acks=0``."""

    partition: int
    offset: int | None
    timestamp_ms: int


Outcome = Delivered | HighwaterError
LAST_RFC3339_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z: the last instant an RFC 3339 date-time can write."""


@functools.lru_cache(maxsize=256)
def rfc3339(timestamp_ms: int) -> str | None:
    """``timestamp_ms`` as an RFC 3339 date-time in UTC with milliseconds; None past ``LAST_RFC3339_MS``.

    Integer arithmetic (a float of seconds would lose the last millisecond of late
    timestamps); cached, because the records of one request mostly share a timestamp,
    the time the request arrived.
    """
    if timestamp_ms > LAST_RFC3339_MS:
        return None
    seconds, millis = divmod(timestamp_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def delivered_at(delivered: Delivered) -> dict[str, Any]:
    """Where and when a record went: all a ``records:batch`` success says besides its id.

    The spec's other fields of a batch success (cluster, topic, key and value sizes) are
    optional and, but for the sizes, the same for every entry: leaving them out keeps
    the answer to a 1000-entry batch at 121 KB instead of 261 KB, and its encoding
    at about a third of the time.
    """
    return {
        "partition_id": delivered.partition,
        "offset": delivered.offset,
        "timestamp": rfc3339(delivered.timestamp_ms),
        "timestamp_ms": delivered.timestamp_ms,
    }


def delivery_fields(cluster_id: str, topic: str, item: EncodedRecord, delivered: Delivered) -> dict[str, Any]:
    """What a report says of a delivered record, as the REST Proxy's ``ProduceResponse`` names it."""
    return {
        "cluster_id": cluster_id,
        "topic_name": topic,
        **delivered_at(delivered),
        "key": size_report(item.key_type, item.record.key),
        "value": size_report(item.value_type, item.record.value),
    }


def check_batch_size(topic: str, batch: bytes, max_message_bytes: int) -> None:
    """Kafka's ``max.message.bytes`` bounds a whole batch, as on the broker side of the wire."""
    if len(batch) > max_message_bytes:
        raise RecordTooLarge(
            f"the record batch for topic {topic!r} is {len(batch)} bytes, larger than its "
            f"max.message.bytes of {max_message_bytes}",
            batch_bytes=len(batch),
            max_message_bytes=max_message_bytes,
        )


def admissible(
    topic: str, batches: list[PartitionBatch], max_message_bytes: int, outcomes: list[Outcome | None]
) -> list[PartitionBatch]:
    """The batches within ``max_message_bytes``; the records of the others get ``RecordTooLarge``.

    After ``build_batches`` only a batch of one record alone too large can be refused here.
    """
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


def partition_chains(batches: list[PartitionBatch]) -> dict[int, list[PartitionBatch]]:
    """Each partition's batches in their order; partitions are appended in parallel, a chain in sequence."""
    chains: dict[int, list[PartitionBatch]] = {}
    for batch in batches:
        chains.setdefault(batch.partition, []).append(batch)
    return chains


class RecordProducer:
    def __init__(self, node: HttpHost) -> None:
        self._node = node
        self._round_robin = RoundRobin()
        self._background: set[asyncio.Task[None]] = set()

    async def produce(
        self, topic: str, records: list[EncodedRecord | HighwaterError], acks: Acks, timeout_ms: int
    ) -> list[Outcome]:
        """One outcome per input slot, in input order; ``UnknownTopic`` or an internal topic fails the whole request."""
        check_client_append(topic)
        partition_count = self._node.catalog.partition_count(topic)
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
        max_message_bytes = self._node.catalog.max_message_bytes(topic)
        batches = admissible(topic, build_batches(placed, max_message_bytes), max_message_bytes, outcomes)
        chains = partition_chains(batches)
        if acks is Acks.ZERO:
            for partition, chain in chains.items():
                self.append_in_background(topic, partition, [batch.batch for batch in chain], timeout_ms)
                for batch in chain:
                    for slot, timestamp_ms in zip(batch.slots, batch.timestamps_ms):
                        outcomes[slot] = Delivered(batch.partition, None, timestamp_ms)
        else:
            crashes = await asyncio.gather(
                *(self._append_chain(topic, chain, acks, timeout_ms, outcomes) for chain in chains.values()),
                return_exceptions=True,
            )
            for crash in crashes:
                if isinstance(crash, BaseException):
                    raise crash
        assert all(outcome is not None for outcome in outcomes)
        return outcomes  # type: ignore[return-value]

    async def _append_chain(
        self, topic: str, chain: list[PartitionBatch], acks: Acks, timeout_ms: int, outcomes: list[Outcome | None]
    ) -> None:
        """Append one partition's batches one after the other, each answered with its own outcome.

        Sequential, so the partition's records land in request order even when the
        appends are forwarded to the leader. A failed batch does not stop the next:
        each entry reports what happened to it.
        """
        for batch in chain:
            try:
                result = await self._node.router.produce(topic, batch.partition, batch.batch, acks, timeout_ms)
            except HighwaterError as error:
                for slot in batch.slots:
                    outcomes[slot] = error
                continue
            for index, (slot, timestamp_ms) in enumerate(zip(batch.slots, batch.timestamps_ms)):
                outcomes[slot] = Delivered(batch.partition, result.base_offset + index, timestamp_ms)

    def append_in_background(
        self, topic: str, partition: int, batches: list[bytes | CheckedBatches], timeout_ms: int
    ) -> None:
        """Append one partition's batches in order, with nobody waiting (``acks=0``); failures can only be logged."""
        task = asyncio.create_task(self._append_unacknowledged(topic, partition, batches, timeout_ms))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _append_unacknowledged(
        self, topic: str, partition: int, batches: list[bytes | CheckedBatches], timeout_ms: int
    ) -> None:
        for batch in batches:
            try:
                result = await self._node.router.produce(topic, partition, batch, Acks.ZERO, timeout_ms)
            except HighwaterError as error:
                log.warning(
                    "produce.acks0_failed", topic=topic, partition=partition, error=error.name, message=error.message
                )
                continue
            except Exception:
                log.exception("produce.acks0_crashed", topic=topic, partition=partition)
                continue
            log.debug("produce.acks0_appended", topic=topic, partition=partition, base_offset=result.base_offset)

    async def drain(self) -> None:
        """Wait for every ``acks=0`` append still running."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
