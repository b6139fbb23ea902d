"""Writers and readers that record every operation into a ``History``.

* ``ProducerWriter`` — the ``Producer`` library (batching, retries, idempotent for
  acks=all): a handful of sends in flight, each value unique (``writer-sequence``).
  Its failures are all ``unknown``: a retried batch may have landed on an earlier try.
* ``SingleRequestWriter`` — one value per request through the shared ``ClusterClient``,
  never retried, so ``NOT_ENOUGH_REPLICAS`` is a *definite* failure the checker can hold
  the cluster to (that value must never be seen).
* ``Reader`` — a ``Consumer`` (``read_uncommitted`` unless told) assigned every partition from the earliest offset; after
  an error it is rebuilt and seeks past what it already saw, so one reader's offsets
  must still only increase.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from broker.acks import Acks
from broker.client.http import ClusterClient
from broker.client.types import TopicPartition
from broker.errors import HighwaterError
from broker.record.codec import RecordInput, encode_batch
from consumer import Consumer
from producer import Producer
from tests.chaos.history import (
    FAIL,
    OK,
    READ_UNCOMMITTED,
    UNKNOWN,
    History,
    ReadEvent,
    WriteOp,
    describe_error,
    single_request_outcome,
)

log = structlog.get_logger(__name__)

REQUEST_TIMEOUT_MS = 3000
DELIVERY_TIMEOUT_MS = 12_000
SENDS_IN_FLIGHT = 4
ERROR_BACKOFF_S = 0.2
"""A client's pause before it retries after an error, as an application's would: part of the workload, not a wait."""
CLIENT_ERRORS = (HighwaterError, OSError, TimeoutError)
"""What a client call may end with; each leaves the operation's outcome to ``history``'s rules."""


class ProducerWriter:
    def __init__(self, name: str, servers: list[str], topic: str, partitions: int, acks: str, history: History):
        self.name, self.topic, self.partitions, self.history = name, topic, partitions, history
        self.idempotent = acks == "all"
        self.producer = Producer(
            servers,
            acks=acks,
            enable_idempotence=self.idempotent,
            linger_ms=2,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            delivery_timeout_ms=DELIVERY_TIMEOUT_MS,
            retry_backoff_ms=100,
        )
        self._sequence = 0

    async def run(self, stop: asyncio.Event) -> None:
        await self.producer.start()
        try:
            while not stop.is_set():
                await asyncio.gather(*(self._write_one() for _ in range(SENDS_IN_FLIGHT)))
        finally:
            await self.producer.close()

    async def _write_one(self) -> None:
        self._sequence += 1
        partition = self._sequence % self.partitions
        op = WriteOp(self.name, self.topic, partition, f"{self.name}-{self._sequence}", self.idempotent)
        self.history.writes.append(op)
        try:
            metadata = await self.producer.send_and_wait(self.topic, op.value.encode(), partition=partition)
        except CLIENT_ERRORS as error:
            op.complete(UNKNOWN, error=describe_error(error))
            return
        op.complete(OK, offset=metadata.offset)


class SingleRequestWriter:
    def __init__(self, name: str, servers: list[str], topic: str, partitions: int, history: History):
        self.name, self.topic, self.partitions, self.history = name, topic, partitions, history
        self.client = ClusterClient(servers, request_timeout_ms=REQUEST_TIMEOUT_MS)
        self._sequence = 0

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await self.client.cluster_id()
            while not stop.is_set():
                await self._write_one()
        finally:
            await self.client.close()

    async def _write_one(self) -> None:
        self._sequence += 1
        tp = TopicPartition(self.topic, self._sequence % self.partitions)
        leader_url = await self._leader_url(tp)
        if leader_url is None:
            await asyncio.sleep(ERROR_BACKOFF_S)
            return
        op = WriteOp(self.name, self.topic, tp.partition, f"{self.name}-{self._sequence}", idempotent=True)
        self.history.writes.append(op)
        batch = encode_batch([RecordInput(None, op.value.encode())])
        try:
            ack = await self.client.produce(leader_url, tp, batch, Acks.ALL, REQUEST_TIMEOUT_MS)
        except CLIENT_ERRORS as error:
            op.complete(single_request_outcome(error), error=describe_error(error))
            self.client.metadata.mark_stale(tp.topic)
            await asyncio.sleep(ERROR_BACKOFF_S if op.outcome == FAIL else ERROR_BACKOFF_S / 2)
            return
        op.complete(OK, offset=ack.base_offset)

    async def _leader_url(self, tp: TopicPartition) -> str | None:
        with contextlib.suppress(*CLIENT_ERRORS):
            await self.client.ensure_topic(tp.topic)
            return self.client.metadata.leader_url(tp)
        return None


class Reader:
    def __init__(
        self,
        name: str,
        servers: list[str],
        topic: str,
        partitions: int,
        history: History,
        isolation_level: str = READ_UNCOMMITTED,
    ):
        self.name, self.servers, self.history, self.isolation_level = name, servers, history, isolation_level
        self.partitions = [TopicPartition(topic, p) for p in range(partitions)]
        self.next_offsets: dict[TopicPartition, int] = {}
        history.isolation[name] = isolation_level

    def _consumer(self) -> Consumer:
        consumer = Consumer(
            self.servers,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=200,
            request_timeout_ms=REQUEST_TIMEOUT_MS,
            isolation_level=self.isolation_level,
        )
        consumer.assign(self.partitions)
        for tp, offset in self.next_offsets.items():
            consumer.seek(tp, offset)
        return consumer

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            consumer = self._consumer()
            try:
                while not stop.is_set():
                    self._record(await consumer.getmany(timeout_ms=200))
            except CLIENT_ERRORS as error:
                self.history.reader_errors.append(f"{self.name}: {describe_error(error)}: {error}")
                await asyncio.sleep(ERROR_BACKOFF_S)
            finally:
                with contextlib.suppress(*CLIENT_ERRORS):
                    await consumer.close()

    def _record(self, batches: dict) -> None:
        for tp, records in batches.items():
            for record in records:
                value = record.value.decode() if record.value is not None else ""
                self.history.reads.append(ReadEvent(self.name, tp.topic, tp.partition, record.offset, value))
                self.next_offsets[tp] = record.offset + 1


async def read_final_log(
    servers: list[str], topic: str, high_watermarks: list[int], isolation_level: str = READ_UNCOMMITTED
) -> dict[int, dict[int, str]]:
    """Everything below each partition's settled HW through the public API: offset → value.

    For ``read_committed`` the partitions must also be stable (LSO = HW). Reading ends at
    the consumer's position, not the last record's offset: a control batch may end a partition.
    """
    final: dict[int, dict[int, str]] = {p: {} for p in range(len(high_watermarks))}
    consumer = Consumer(servers, auto_offset_reset="earliest", fetch_max_wait_ms=100, isolation_level=isolation_level)
    partitions = [TopicPartition(topic, p) for p in range(len(high_watermarks))]
    consumer.assign(partitions)
    try:
        async with asyncio.timeout(30):
            while any([await consumer.position(tp) < hw for tp, hw in zip(partitions, high_watermarks)]):
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    for record in records:
                        final[tp.partition][record.offset] = record.value.decode() if record.value else ""
    finally:
        await consumer.close()
    return final


__all__ = ["FAIL", "OK", "UNKNOWN", "ProducerWriter", "Reader", "SingleRequestWriter", "read_final_log"]
