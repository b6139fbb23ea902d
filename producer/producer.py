"""``Producer``: the asyncio producer, shaped after aiokafka's ``AIOKafkaProducer``.

    async with Producer("http://127.0.0.1:9092", acks="all", linger_ms=5) as producer:
        metadata = await producer.send_and_wait("orders", b"value", key=b"customer-7")

``send`` returns once the record sits in its partition's batch (it waits only for
metadata and, under back-pressure, for ``buffer_memory``); the returned future
resolves to ``RecordMetadata`` when the leader acknowledges the batch, or to the
error that ended it. The ``Sender`` task does all network work.

Settings are ``config.client.ProducerSettings`` (Kafka's names and defaults), given as
keyword arguments; the environment (``HIGHWATER_PRODUCER_*``) fills what is not given.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any, Self

from broker.acks import Acks
from broker.client.errors import BufferExhausted, ProducerClosed
from broker.client.http import ClusterClient, now_ms
from broker.client.library_log import library_logger
from broker.client.types import ProduceAck, TopicPartition
from broker.errors import HighwaterError, RecordTooLarge, UnknownPartition
from broker.record.codec import RecordInput
from broker.waiting import wait_event
from config.client import ProducerSettings
from producer.accumulator import RecordAccumulator
from producer.batch import ProducerBatch, estimate_record_bytes
from producer.partitioner import StickyPartitioner
from producer.records import COMPRESSION_CODECS, UNKNOWN_OFFSET, RecordMetadata
from producer.sender import Sender, SendOptions

log = library_logger(__name__)

Headers = Sequence[tuple[str, bytes | None]]


def _servers_text(servers: str | Sequence[str]) -> str:
    return servers if isinstance(servers, str) else ",".join(servers)


class Producer:
    """Batching, retrying producer; one instance per event loop.

    As in Kafka, idempotence is on by default but quietly off when ``acks`` other than
    ``all`` is asked for without naming ``enable_idempotence``; naming both is an error.
    """

    def __init__(self, servers: str | Sequence[str], **settings: Any) -> None:
        if "enable_idempotence" not in settings and str(settings.get("acks", Acks.ALL.value)).lower() != Acks.ALL.value:
            settings["enable_idempotence"] = False
        self.settings = ProducerSettings(bootstrap_servers=_servers_text(servers), **settings)
        config = self.settings
        self._client = ClusterClient(
            config.bootstrap_urls,
            request_timeout_ms=config.request_timeout_ms,
            metadata_max_age_ms=config.metadata_max_age_ms,
            unresponsive_backoff_ms=config.unresponsive_backoff_ms,
            client_id=config.client_id,
            **config.security_options(),
        )
        self._accumulator = RecordAccumulator(
            batch_size=config.batch_size,
            linger_ms=config.linger_ms,
            buffer_memory=config.buffer_memory,
            delivery_timeout_ms=config.delivery_timeout_ms,
        )
        self._partitioner = StickyPartitioner()
        options = SendOptions(
            acks=Acks(config.acks),
            compression=COMPRESSION_CODECS[config.compression],
            max_in_flight=config.max_in_flight_requests_per_connection,
            request_timeout_ms=config.request_timeout_ms,
            retry_backoff_ms=config.retry_backoff_ms,
            idempotent=config.enable_idempotence,
        )
        self._sender = Sender(self._client, self._accumulator, self._partitioner, options, self._complete)
        self._sender_task: asyncio.Task[None] | None = None
        self._memory_freed = asyncio.Event()
        self._closed = False

    @property
    def client(self) -> ClusterClient:
        return self._client

    @property
    def requests_sent(self) -> int:
        """Produce requests sent so far (one per batch attempt)."""
        return self._sender.requests_sent

    @property
    def idempotent(self) -> bool:
        return self._sender.idempotent

    async def start(self) -> None:
        """Connect: learn the cluster id and, for idempotence, a producer id."""
        if self._sender_task is not None:
            return
        await self._client.cluster_id()
        await self._sender.init_identity()
        self._sender_task = asyncio.get_running_loop().create_task(self._sender.run())

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue one record; a future of its ``RecordMetadata``. Waits only for metadata and buffer space."""
        if self._closed:
            raise ProducerClosed("send() after close()")
        if self._sender_task is None:
            await self.start()
        header_list = list(headers or ())
        size_bytes = estimate_record_bytes(key, value, header_list)
        self._check_size(size_bytes)
        tp = await self._choose_partition(topic, key, partition)
        if not self._accumulator.has_room(size_bytes):
            await self._wait_for_memory(size_bytes)
        timestamp_ms = int(time.time() * 1000) if timestamp is None else timestamp
        delivery: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        record = RecordInput(key, value, header_list, timestamp_ms)
        appended = self._accumulator.append(tp, record, size_bytes, delivery, now_ms())
        if appended.batch_full or appended.new_batch:
            self._sender.wakeup()
        return delivery

    async def send_and_wait(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> RecordMetadata:
        return await (await self.send(topic, value, key, headers, partition, timestamp))

    def _check_size(self, size_bytes: int) -> None:
        limit = min(self.settings.max_request_size, self.settings.buffer_memory)
        if size_bytes > limit:
            raise RecordTooLarge(
                f"the record is about {size_bytes} bytes, more than max_request_size/buffer_memory ({limit})"
            )

    async def _choose_partition(self, topic: str, key: bytes | None, partition: int | None) -> TopicPartition:
        count = await self._client.ensure_topic(topic)
        if partition is not None:
            if not 0 <= partition < count:
                raise UnknownPartition(f"topic {topic!r} has partitions 0..{count - 1}, not {partition}")
            return TopicPartition(topic, partition)
        available = self._client.metadata.available_partitions(topic)
        return TopicPartition(topic, self._partitioner.partition(topic, key, count, available))

    async def _wait_for_memory(self, size_bytes: int) -> None:
        """Back-pressure: wait for acknowledged batches to free ``buffer_memory``, up to ``max_block_ms``."""
        deadline_ms = now_ms() + self.settings.max_block_ms
        while not self._accumulator.has_room(size_bytes):
            remaining_ms = deadline_ms - now_ms()
            if remaining_ms <= 0:
                raise BufferExhausted(
                    f"buffer_memory ({self.settings.buffer_memory} bytes) stayed full for "
                    f"max_block_ms ({self.settings.max_block_ms}); nothing was queued"
                )
            self._memory_freed.clear()
            self._sender.wakeup()
            await wait_event(self._memory_freed, remaining_ms / 1000)

    def _complete(self, batch: ProducerBatch, ack: ProduceAck | None, error: HighwaterError | None) -> None:
        """Resolve the batch's record futures (called by the sender, on the loop)."""
        self._memory_freed.set()
        tp = batch.tp
        for index, (record, delivery) in enumerate(zip(batch.records, batch.deliveries)):
            if delivery.done():
                continue
            if error is not None:
                delivery.set_exception(error)
                continue
            assert ack is not None
            assert record.timestamp is not None  # send() stamps every record it queues
            offset = UNKNOWN_OFFSET if ack.base_offset is None else ack.base_offset + index
            timestamp = ack.log_append_time_ms if ack.log_append_time_ms >= 0 else record.timestamp
            delivery.set_result(RecordMetadata(tp.topic, tp.partition, offset, timestamp))

    async def flush(self, timeout_ms: int | None = None) -> None:
        """Send everything queued now, without waiting for ``linger_ms``, and wait for every answer."""
        pending = [batch.deliveries[0] for batch in self._accumulator.incomplete_batches()]
        if not pending:
            return
        self._accumulator.begin_flush()
        self._sender.wakeup()
        try:
            async with asyncio.timeout(None if timeout_ms is None else timeout_ms / 1000):
                await asyncio.gather(*pending, return_exceptions=True)
        finally:
            self._accumulator.end_flush()

    async def close(self, timeout_ms: int | None = None) -> None:
        """Deliver what is queued (up to ``timeout_ms``), then stop; anything left fails with ``ProducerClosed``."""
        if self._closed:
            return
        self._closed = True
        if self._sender_task is not None:
            self._accumulator.closing = True
            self._sender.stop()
            try:
                async with asyncio.timeout(None if timeout_ms is None else timeout_ms / 1000):
                    await asyncio.shield(self._sender_task)
            except TimeoutError:
                log.warning("producer_close_timed_out unsent_batches=%d", len(self._accumulator.incomplete_batches()))
                self._sender_task.cancel()
                await asyncio.gather(self._sender_task, return_exceptions=True)
                await self._sender.abort()
        for batch in self._accumulator.abort_unsent():
            self._accumulator.deallocate(batch)
            self._complete(batch, None, ProducerClosed("the producer closed before this record was sent"))
        await self._client.close()
