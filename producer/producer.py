"""``Producer``: the asyncio producer, shaped after aiokafka's ``AIOKafkaProducer``.

    async with Producer("http://127.0.0.1:9092", acks="all", linger_ms=5) as producer:
        metadata = await producer.send_and_wait("orders", b"value", key=b"customer-7")

``send`` returns once the record sits in its partition's batch (it waits only for
metadata and, under back-pressure, for ``buffer_memory``); the returned future
resolves to ``RecordMetadata`` when the leader acknowledges the batch, or to the
error that ended it. The ``Sender`` task does most network work; a batch that is
ready the moment a record joins it (full, or ``linger_ms=0``) is handed to its request
task by ``send`` itself, so a lone record costs no extra loop turn.

Cost per record: ``send_many`` appends a list of values as column slices with one
future per call (``SendManyResult``: offsets computed on demand); ``send(...,
want_future=False)`` skips the future. Back-pressure is by bytes (``buffer_memory``)
and by time (``max_queue_ms``): see ``_wait_for_room``.

Settings are ``config.client.ProducerSettings`` (Kafka's names and defaults), given as
keyword arguments; the environment (``HIGHWATER_PRODUCER_*``) fills what is not given.
A refused setting raises ``ClientConfigError`` (a ``ValueError``) naming it, the value
given and what is allowed (``broker.client.settings``).
"""

from __future__ import annotations

import asyncio
import contextlib
from bisect import bisect_right
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from itertools import accumulate
from typing import Any, Literal, Self, overload

from broker.acks import Acks
from broker.client.errors import BufferExhausted, IllegalTransactionState, ProducerClosed
from broker.client.groups import GroupClient
from broker.client.http import ClusterClient
from broker.client.library_log import library_logger
from broker.client.settings import build_settings
from broker.client.transactions import TransactionClient
from broker.client.types import ConsumerGroupMetadata, OffsetAndMetadata, ProduceAck, TopicPartition
from broker.clock import monotonic_ms, wall_clock_ms
from broker.errors import HighwaterError, RecordTooLarge, UnknownPartition
from broker.partitioner import partition_for_key
from broker.waiting import wait_event
from config.client import ProducerSettings
from producer.accumulator import BATCH_FULL, RecordAccumulator
from producer.batch import (
    LENGTH_FIELD_BYTES,
    RECORD_OVERHEAD_BYTES,
    ProducerBatch,
    estimate_record_bytes,
    record_estimates,
)
from producer.many import ManyCall, ManyChunk
from producer.partitioner import StickyPartitioner
from producer.rate import AckRate
from producer.records import COMPRESSION_CODECS, UNKNOWN_OFFSET, RecordMetadata, SendManyResult
from producer.sender import Sender, SendOptions
from producer.transactions import TransactionManager, TxnPhase

log = library_logger(__name__)

Headers = Sequence[tuple[str, bytes | None]]
_FIXED_RECORD_BYTES = RECORD_OVERHEAD_BYTES + 3 * LENGTH_FIELD_BYTES
"""``estimate_record_bytes`` of a record without key, value or headers."""


class Producer:
    """Batching, retrying producer; one instance per event loop.

    As in Kafka, idempotence is on by default but quietly off when ``acks`` other than
    ``all`` is asked for without naming ``enable_idempotence``; naming both is an error.
    """

    def __init__(self, servers: str | Sequence[str], **settings: Any) -> None:
        if "enable_idempotence" not in settings and str(settings.get("acks", Acks.ALL.value)).lower() != Acks.ALL.value:
            settings["enable_idempotence"] = False
        self.settings = build_settings(ProducerSettings, "producer", servers, settings)
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
            transactional_id=config.transactional_id,
        )
        self._transaction = (
            None
            if config.transactional_id is None
            else TransactionManager(
                TransactionClient(self._client, config.transactional_id),
                config.transaction_timeout_ms,
                config.retry_backoff_ms,
                config.max_block_ms,
                lambda: self._sender.wakeup(),  # noqa: PLW0108 - the sender is built next, around this manager
            )
        )
        self._groups: GroupClient | None = None
        self._sender = Sender(
            self._client, self._accumulator, self._partitioner, options, self._complete, self._transaction
        )
        self._sender_task: asyncio.Task[None] | None = None
        self._room_freed = asyncio.Event()
        """Set when a batch finishes (memory freed, the oldest batch maybe gone): what a back-pressured send waits for."""
        self._batch_done = asyncio.Event()
        self._closed = False
        self._max_record_bytes = min(config.max_request_size, config.buffer_memory)
        self._max_queue_ms = config.max_queue_ms
        self._rate = AckRate()
        self._limit_floor_bytes = config.batch_size * config.max_in_flight_requests_per_connection
        self._queue_limit_bytes = float("inf")
        """Unacknowledged bytes the brokers drain in ``max_queue_ms`` (``AckRate``); recomputed per rate
        window, so the check on every ``send`` compares two numbers."""
        self._linger_ms = config.linger_ms
        self._metadata_max_age_ms = config.metadata_max_age_ms
        self._tps: dict[tuple[str, int], TopicPartition] = {}
        self._loop_ref: asyncio.AbstractEventLoop | None = None
        self.failed_records = 0
        """Records whose batch failed for good (also those sent with ``want_future=False``)."""

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        if self._loop_ref is None:
            self._loop_ref = asyncio.get_running_loop()
        return self._loop_ref

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

    @property
    def producer_identity(self) -> tuple[int, int] | None:
        """(producer id, epoch) the batches are stamped with; None before ``start`` or without idempotence."""
        if not self._sender.idempotent or self._sender.producer_id < 0:
            return None
        return self._sender.producer_id, self._sender.producer_epoch

    async def start(self) -> None:
        """Connect: learn the cluster id and, for idempotence, a producer id.

        A start that fails (no broker answered, TLS refused) leaves no HTTP session open:
        ``async with`` never reaches ``close`` then, and a script that stops at the error
        never calls it. Calling ``start`` (or ``send``) again reconnects.
        """
        if self._sender_task is not None:
            return
        try:
            await self._client.cluster_id()
            await self._sender.init_identity()
        except BaseException:
            await self._client.close()
            raise
        self._sender_task = asyncio.get_running_loop().create_task(self._sender.run())

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @overload
    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        *,
        want_future: Literal[True] = True,
    ) -> asyncio.Future[RecordMetadata]: ...

    @overload
    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        *,
        want_future: Literal[False],
    ) -> None: ...

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        headers: Headers | None = None,
        partition: int | None = None,
        timestamp: int | None = None,
        *,
        want_future: bool = True,
    ) -> asyncio.Future[RecordMetadata] | None:
        """Queue one record; a future of its ``RecordMetadata``. Waits only for metadata and buffer space.

        ``want_future=False`` skips the future (and returns ``None``): the cheapest send, for
        callers that learn the outcome from ``flush`` and ``failed_records`` instead.
        """
        if self._closed:
            raise ProducerClosed("send() after close()")
        if self._sender_task is None:
            await self.start()
        if self._transaction is not None:
            self._transaction.require_open()
        if headers:
            header_list: list[tuple[str, bytes | None]] | None = list(headers)
            size_bytes = estimate_record_bytes(key, value, header_list)  # type: ignore[arg-type]
        else:
            header_list = None
            size_bytes = _FIXED_RECORD_BYTES + (0 if value is None else len(value)) + (0 if key is None else len(key))
        if size_bytes > self._max_record_bytes:
            self._check_size(size_bytes)
        current_ms = monotonic_ms()
        tp = self._fast_partition(topic, key, partition, current_ms) or await self._choose_partition(
            topic, key, partition
        )
        accumulator = self._accumulator
        if (
            not accumulator.has_room(size_bytes)
            or accumulator.buffered_bytes > self._queue_limit_bytes
            or (self._max_queue_ms is not None and accumulator.queued_too_long(tp, current_ms, self._max_queue_ms))
        ):
            await self._wait_for_room(tp, size_bytes)
            current_ms = monotonic_ms()
        delivery = self._loop.create_future() if want_future else None
        flags = accumulator.append_record(
            tp,
            key,
            value,
            header_list,
            wall_clock_ms() if timestamp is None else timestamp,
            size_bytes,
            delivery,
            current_ms,
        )
        if flags:
            self._dispatch(tp, flags)
        return delivery

    async def send_many(
        self,
        topic: str,
        values: Sequence[bytes | None],
        *,
        keys: Sequence[bytes | None] | None = None,
        partition: int | None = None,
        headers: Sequence[Headers] | None = None,
        timestamp: int | None = None,
    ) -> asyncio.Future[SendManyResult]:
        """Queue ``values`` as records, in order; one future of a ``SendManyResult`` for all of them.

        The bulk path: no object per record. Each record goes where ``send`` would put it
        (``partition``, else its key's partition, else one sticky partition for the whole
        call) and shares the call's ``timestamp``. Records of a partition keep the call's
        order, go into batches with their sequence numbers, retries and delivery timeout
        exactly as ``send``'s do, and count against ``buffer_memory`` and ``max_queue_ms``
        (a call larger than the free room is appended in parts, waiting in between; if
        ``max_block_ms`` runs out part-way, ``BufferExhausted`` says so and the part queued
        is still sent). The future fails with the first error of any of its batches; the
        other batches may have been written.
        """
        if self._closed:
            raise ProducerClosed("send_many() after close()")
        if self._sender_task is None:
            await self.start()
        count = len(values)
        if (keys is not None and len(keys) != count) or (headers is not None and len(headers) != count):
            raise ValueError("send_many needs as many keys (and header lists) as values")
        call = ManyCall(self._loop.create_future(), topic, count)
        if count == 0:
            call.close()
            return call.future
        sizes = record_estimates(values, keys, headers)
        largest = max(sizes)
        if largest > self._max_record_bytes:
            self._check_size(largest)
        timestamp_ms = wall_clock_ms() if timestamp is None else timestamp
        for tp, indices in await self._route_many(topic, keys, partition, count):
            part_values, part_keys, part_headers, part_sizes = values, keys, headers, sizes
            if not isinstance(indices, range):
                part_values = [values[index] for index in indices]
                part_keys = None if keys is None else [keys[index] for index in indices]
                part_headers = None if headers is None else [headers[index] for index in indices]
                part_sizes = [sizes[index] for index in indices]
            try:
                await self._append_many(
                    tp, call, indices, part_values, part_keys, part_headers, part_sizes, timestamp_ms
                )
            except BufferExhausted as error:
                if call.pending:
                    call.future.cancel()
                    raise BufferExhausted(
                        f"{error.message}, after part of this send_many was queued; "
                        "those records are sent, but this call reports no outcome for them"
                    ) from error
                raise
        call.close()
        return call.future

    async def _route_many(
        self, topic: str, keys: Sequence[bytes | None] | None, partition: int | None, count: int
    ) -> list[tuple[TopicPartition, Sequence[int]]]:
        """The partitions of a bulk send's records: one for the whole call unless keys spread it."""
        if partition is not None or keys is None or all(key is None for key in keys):
            return [(await self._choose_partition(topic, None, partition), range(count))]
        partition_count = await self._client.ensure_topic(topic)
        sticky = await self._choose_partition(topic, None, None)
        groups: dict[int, list[int]] = {}
        for index, key in enumerate(keys):
            target = sticky.partition if key is None else partition_for_key(key, partition_count)
            groups.setdefault(target, []).append(index)
        return [(self._topic_partition(topic, target), indices) for target, indices in groups.items()]

    async def _append_many(
        self,
        tp: TopicPartition,
        call: ManyCall,
        indices: Sequence[int],
        values: Sequence[bytes | None],
        keys: Sequence[bytes | None] | None,
        headers: Sequence[Headers] | None,
        sizes: list[int],
        timestamp_ms: int,
    ) -> None:
        """Append one partition's share of a bulk send, in parts that fit the free ``buffer_memory``."""
        accumulator = self._accumulator
        count = len(values)
        start = 0
        while start < count:
            current_ms = monotonic_ms()
            if (
                not accumulator.has_room(sizes[start])
                or accumulator.buffered_bytes > self._queue_limit_bytes
                or (self._max_queue_ms is not None and accumulator.queued_too_long(tp, current_ms, self._max_queue_ms))
            ):
                await self._wait_for_room(tp, sizes[start])
                current_ms = monotonic_ms()
            room = accumulator.room_bytes()
            cumulative = list(accumulate(sizes[start:]))
            stop = start + max(1, bisect_right(cumulative, room))
            if stop < count:
                cumulative = cumulative[: stop - start]
            flags = accumulator.append_many(
                tp,
                values[start:stop],
                timestamp_ms,
                None if keys is None else keys[start:stop],
                None if headers is None else headers[start:stop],
                cumulative,
                partial(call.chunk_of, indices, start),
                current_ms,
            )
            if flags:
                self._dispatch(tp, flags)
            start = stop

    def _dispatch(self, tp: TopicPartition, flags: int) -> None:
        """Hand the sender new work: a full batch (or any batch, with ``linger_ms=0``) is sent right
        here, with no extra loop turn between ``send`` and the request; the sender task is woken
        too, for what could not go yet and for the linger timer of a new batch."""
        if flags & BATCH_FULL or self._linger_ms == 0:
            self._sender.send_partition_now(tp)
        self._sender.wakeup()

    def _fast_partition(
        self, topic: str, key: bytes | None, partition: int | None, current_ms: int
    ) -> TopicPartition | None:
        """The record's partition from cached metadata, or ``None`` when it needs a refresh or a check."""
        metadata = self._client.metadata
        if metadata.needs_refresh(topic, current_ms, self._metadata_max_age_ms):
            return None
        count = metadata.partition_count(topic)
        assert count is not None
        if partition is not None:
            return self._topic_partition(topic, partition) if 0 <= partition < count else None
        if key is not None:
            return self._topic_partition(topic, partition_for_key(key, count))
        sticky = self._partitioner.current(topic, count)
        return None if sticky is None else self._topic_partition(topic, sticky)

    def _topic_partition(self, topic: str, partition: int) -> TopicPartition:
        """One shared ``TopicPartition`` per partition, not one per record."""
        cached = self._tps.get((topic, partition))
        if cached is None:
            cached = self._tps[(topic, partition)] = TopicPartition(topic, partition)
        return cached

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
            return self._topic_partition(topic, partition)
        available = self._client.metadata.available_partitions(topic)
        return self._topic_partition(topic, self._partitioner.partition(topic, key, count, available))

    async def _wait_for_room(self, tp: TopicPartition, size_bytes: int) -> None:
        """Back-pressure: wait, up to ``max_block_ms``, until ``size_bytes`` fit in ``buffer_memory``,
        the expected wait of a record appended now is within ``max_queue_ms``, and ``tp``'s oldest
        unacknowledged batch is younger than ``linger_ms + max_queue_ms``.

        The expected wait is the producer's unacknowledged bytes (sent and unsent) over the rate
        the brokers acknowledge them (``AckRate``): a new record waits for everything ahead of it,
        in flight or queued, on every partition, since the brokers' throughput drains them all. The
        oldest batch's age alone misses that: at full load the oldest batch can be young while
        ``max_in_flight`` full requests per partition are ahead of the new record. The age check
        stays for what the rate cannot see: start-up (no rate yet, only ``buffer_memory`` and the
        age bound) and one partition that stops (no leader) while the others keep the rate up.

        Never a deadlock: with nothing unacknowledged every check passes (``has_room`` and
        ``queued_too_long`` by their rules, the rate bound as ``0 > limit`` is false), so a lone
        record larger than the bound goes. The bound is at least ``batch_size * max_in_flight``:
        the rate is measured from this producer's own traffic, and a window too small to fill
        the pipeline would measure (and so allow) ever less.
        """
        deadline_ms = monotonic_ms() + self.settings.max_block_ms
        accumulator = self._accumulator
        while True:
            current_ms = monotonic_ms()
            full = not accumulator.has_room(size_bytes)
            behind = accumulator.buffered_bytes > self._queue_limit_bytes
            late = self._max_queue_ms is not None and accumulator.queued_too_long(tp, current_ms, self._max_queue_ms)
            if not (full or behind or late):
                return
            remaining_ms = deadline_ms - current_ms
            if remaining_ms <= 0:
                cause = (
                    f"buffer_memory ({self.settings.buffer_memory} bytes) stayed full"
                    if full
                    else f"unacknowledged bytes kept the expected wait above max_queue_ms ({self._max_queue_ms})"
                    if behind
                    else f"{tp.topic}-{tp.partition} kept unacknowledged batches older than max_queue_ms ({self._max_queue_ms})"
                )
                raise BufferExhausted(f"{cause} for max_block_ms ({self.settings.max_block_ms}); nothing was queued")
            self._room_freed.clear()
            self._sender.wakeup()
            await wait_event(self._room_freed, remaining_ms / 1000)

    def _complete(self, batch: ProducerBatch, ack: ProduceAck | None, error: HighwaterError | None) -> None:
        """Resolve the batch's deliveries (called by the sender, on the loop)."""
        self._room_freed.set()
        self._batch_done.set()
        if self._max_queue_ms is not None:
            rate = self._rate
            if error is None and rate.acknowledged(batch.buffered_bytes, monotonic_ms(), batch.created_ms):
                self._queue_limit_bytes = rate.limit_bytes(self._max_queue_ms, self._limit_floor_bytes)
            if self._accumulator.buffered_bytes == 0:
                rate.idle()
        tp = batch.tp
        if error is not None:
            self.failed_records += batch.record_count
            if self._transaction is not None:
                self._transaction.fail(error)
        base_offset = UNKNOWN_OFFSET if ack is None or ack.base_offset is None else ack.base_offset
        append_time = -1 if ack is None else ack.log_append_time_ms
        timestamps = batch.timestamps
        index = 0
        for delivery, count in zip(batch.deliveries, batch.delivery_counts):
            if delivery is not None:
                offset = UNKNOWN_OFFSET if base_offset == UNKNOWN_OFFSET else base_offset + index
                timestamp = append_time if append_time >= 0 else timestamps[index]
                if type(delivery) is ManyChunk:
                    delivery.complete(tp.partition, offset, timestamp, error)
                elif not delivery.done():
                    if error is not None:
                        delivery.set_exception(error)
                    else:
                        delivery.set_result(RecordMetadata(tp.topic, tp.partition, offset, timestamp))
            index += count

    # ------------------------------------------------------------------ transactions

    @property
    def transactional(self) -> bool:
        return self._transaction is not None

    def _transactions(self) -> TransactionManager:
        if self._transaction is None:
            raise IllegalTransactionState("this producer has no transactional_id; transactions need one")
        return self._transaction

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open (begun, neither committed nor aborted yet)."""
        return self._transaction is not None and self._transaction.phase is not TxnPhase.READY

    def begin_transaction(self) -> None:
        """Open a transaction: what is sent until ``commit_transaction`` is read (``read_committed``) all or none."""
        self._transactions().begin()

    async def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, int | OffsetAndMetadata], group: str | ConsumerGroupMetadata
    ) -> None:
        """Commit a group's ``offsets`` (the next offset to read, per partition) with the transaction: they
        apply when it commits, and never if it aborts (consume-transform-produce, exactly once).

        ``group`` is the group's id, or the consuming member's ``Consumer.group_metadata()``: the
        coordinator then refuses the offsets of a member fenced since (``STALE_MEMBER_EPOCH``,
        ``UNKNOWN_MEMBER_ID``; KIP-447), and the transaction can only be aborted.
        """
        if self._groups is None:
            self._groups = GroupClient(self._client)
        member = None if isinstance(group, str) else group
        group_id = group if isinstance(group, str) else group.group_id
        await self._transactions().send_offsets(offsets, group_id, self._groups, member)

    async def commit_transaction(self) -> None:
        """Send what the transaction still holds, then commit it; ``IllegalTransactionState`` if a batch of it
        failed (abort it then). Returns once the outcome is durable; ``read_committed`` readers see the records
        when the markers reach the partitions, just after."""
        transaction = self._transactions()
        transaction.require_committable()
        await self.flush()
        await transaction.commit()

    async def abort_transaction(self) -> None:
        """Abort the transaction; its records are never shown to ``read_committed`` readers."""
        transaction = self._transactions()
        await self.flush()
        renewal = self._sender.init_identity if self._sender.identity_renewal_needed else None
        await transaction.abort(renewal)
        self._sender.wakeup()

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """``async with producer.transaction():`` commits at the end of the block, aborts if it raises."""
        self.begin_transaction()
        try:
            yield
        except BaseException:
            await self.abort_transaction()
            raise
        await self.commit_transaction()

    async def flush(self, timeout_ms: int | None = None) -> None:
        """Send everything queued now, without waiting for ``linger_ms``, and wait for every answer."""
        pending = self._accumulator.incomplete_batches()
        if not pending:
            return
        self._accumulator.begin_flush()
        self._sender.wakeup()
        try:
            async with asyncio.timeout(None if timeout_ms is None else timeout_ms / 1000):
                while pending:
                    self._batch_done.clear()
                    pending = [batch for batch in pending if not batch.finished]
                    if pending:
                        await self._batch_done.wait()
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
