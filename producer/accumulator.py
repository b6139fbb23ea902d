"""``RecordAccumulator``: records gathered into per-partition batches until they are worth sending.

Pure (no asyncio, no clock): time enters as ``now_ms``. Kafka's rules
(``RecordAccumulator.ready``): the head batch of a partition is ready to send when

* it is full (the next record did not fit in ``batch_size``), or a newer batch is
  queued behind it,
* it has waited ``linger_ms`` since its first record,
* a ``flush`` is in progress, or the producer is closing.

Memory: every record's estimated size is counted in ``buffered_bytes`` from ``append``
until its batch is acknowledged or fails (``deallocate``). The producer makes ``send``
wait while ``has_room`` is false: that is the ``buffer_memory`` back-pressure; and
while ``queued_too_long``: the time bound of it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.client.types import TopicPartition
from broker.record.codec import RecordInput
from broker.record.header import RECORD_BATCH_OVERHEAD
from producer.batch import ProducerBatch

NEW_BATCH = 1
"""``append_*`` flag: a batch was created (a linger timer starts)."""
BATCH_FULL = 2
"""``append_*`` flag: a batch of the partition is now full, so the sender has work right away."""


@dataclass(frozen=True, slots=True)
class AppendResult:
    batch: ProducerBatch
    new_batch: bool
    """A batch was created for this record (a linger timer starts)."""
    batch_full: bool
    """A batch of the partition is now full, so the sender has work right away."""


@dataclass(frozen=True, slots=True)
class ReadyCheck:
    partitions: list[TopicPartition]
    next_check_ms: int | None
    """When the earliest lingering batch becomes ready; ``None`` if nothing lingers."""


class RecordAccumulator:
    def __init__(self, *, batch_size: int, linger_ms: int, buffer_memory: int, delivery_timeout_ms: int) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.buffer_memory = buffer_memory
        self.delivery_timeout_ms = delivery_timeout_ms
        self.buffered_bytes = 0
        self.closing = False
        self._flushes_in_progress = 0
        self._queues: dict[TopicPartition, deque[ProducerBatch]] = {}
        self._incomplete: set[ProducerBatch] = set()
        self._by_age: dict[TopicPartition, deque[ProducerBatch]] = {}
        """Each partition's unfinished batches in creation order; finished ones leave the head lazily."""
        self._created = 0

    def has_room(self, size_bytes: int) -> bool:
        """Whether a record of ``size_bytes`` fits in ``buffer_memory`` now (always, when nothing is buffered)."""
        return self.buffered_bytes == 0 or self.buffered_bytes + size_bytes <= self.buffer_memory

    def append(
        self, tp: TopicPartition, record: RecordInput, size_bytes: int, delivery: Any, now_ms: int
    ) -> AppendResult:
        """Append one ``RecordInput`` (timestamped); ``append_record`` without the tuple is the hot path."""
        assert record.timestamp is not None
        flags = self.append_record(
            tp, record.key, record.value, record.headers, record.timestamp, size_bytes, delivery, now_ms
        )
        return AppendResult(self._queues[tp][-1], bool(flags & NEW_BATCH), bool(flags & BATCH_FULL))

    def append_record(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] | None,
        timestamp: int,
        size_bytes: int,
        delivery: Any,
        now_ms: int,
    ) -> int:
        """Append one record; ``NEW_BATCH | BATCH_FULL`` flags (0: nothing for the sender to do yet)."""
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        self.buffered_bytes += size_bytes
        flags = 0
        batch_size = self.batch_size
        batch = queue[-1] if queue else None
        # a queued batch holds at least one record, so the rule is: open, and room for this one
        if batch is None or batch.sealed or RECORD_BATCH_OVERHEAD + batch.buffered_bytes + size_bytes > batch_size:
            flags = NEW_BATCH
            if batch is not None:
                batch.sealed = True
                flags |= BATCH_FULL
            batch = self._new_batch(tp, queue, now_ms)
        batch.append(key, value, headers, timestamp, size_bytes, delivery)
        if RECORD_BATCH_OVERHEAD + batch.buffered_bytes >= batch_size:
            batch.sealed = True
            flags |= BATCH_FULL
        return flags

    def append_many(
        self,
        tp: TopicPartition,
        values: Sequence[bytes | None],
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        headers: Sequence[Sequence[tuple[str, bytes | None]]] | None,
        cumulative_bytes: Sequence[int],
        delivery_for: Callable[[int, int], Any],
        now_ms: int,
    ) -> int:
        """Append ``values`` in order, cut into batches by ``batch_size``; flags as ``append_record``.

        ``cumulative_bytes[i]`` is the estimate of records ``0..i`` together (so the cuts
        are found by bisection, not by a loop over records); ``delivery_for(start, stop)``
        gives the token of the records ``start..stop-1`` that land in one batch.
        """
        queue = self._queues.get(tp)
        if queue is None:
            queue = self._queues[tp] = deque()
        count = len(values)
        self.buffered_bytes += cumulative_bytes[-1]
        flags = 0
        start = 0
        while start < count:
            before = cumulative_bytes[start - 1] if start else 0
            batch = queue[-1] if queue else None
            stop = start
            if batch is not None and not batch.sealed:
                room = self.batch_size - batch.estimated_size_bytes
                stop = bisect_right(cumulative_bytes, before + room, start, count)
            if stop == start:
                flags |= NEW_BATCH
                if batch is not None:
                    batch.sealed = True
                    flags |= BATCH_FULL
                batch = self._new_batch(tp, queue, now_ms)
                room = self.batch_size - RECORD_BATCH_OVERHEAD
                stop = max(start + 1, bisect_right(cumulative_bytes, before + room, start, count))
            assert batch is not None
            batch.extend(
                values[start:stop],
                timestamp,
                None if keys is None else keys[start:stop],
                None if headers is None else headers[start:stop],
                cumulative_bytes[stop - 1] - before,
                delivery_for(start, stop),
            )
            if stop < count or batch.estimated_size_bytes >= self.batch_size:
                batch.sealed = True
                flags |= BATCH_FULL
            start = stop
        return flags

    def _new_batch(self, tp: TopicPartition, queue: deque[ProducerBatch], now_ms: int) -> ProducerBatch:
        self._created += 1
        batch = ProducerBatch(tp, self._created, now_ms, now_ms + self.delivery_timeout_ms)
        queue.append(batch)
        by_age = self._by_age.get(tp)
        if by_age is None:
            by_age = self._by_age[tp] = deque()
        by_age.append(batch)
        self._incomplete.add(batch)
        return batch

    def room_bytes(self) -> int:
        """Bytes that may still be appended before ``buffer_memory`` is reached."""
        return self.buffer_memory - self.buffered_bytes

    def queued_too_long(self, tp: TopicPartition, now_ms: int, max_queue_ms: int) -> bool:
        """Whether ``tp``'s oldest unacknowledged batch (sent or not) is older than ``linger_ms + max_queue_ms``.

        The time bound of back-pressure: at full load batches wait for the in-flight
        limit, and ``buffer_memory`` alone would let seconds of records queue. Counting
        sent batches too bounds what a caller feels (the wait for an acknowledgement),
        not only the queue before the request; counting per partition keeps a partition
        without a leader from holding back records bound elsewhere. Batches may finish
        out of order (retries), so finished heads are dropped lazily: amortised O(1).
        """
        oldest = self._by_age.get(tp)
        if not oldest:
            return False
        while oldest and oldest[0].finished:
            oldest.popleft()
        return bool(oldest) and oldest[0].created_ms + self.linger_ms + max_queue_ms <= now_ms

    def ready(self, now_ms: int) -> ReadyCheck:
        ready: list[TopicPartition] = []
        next_check_ms: int | None = None
        everything_ready = self.closing or self._flushes_in_progress > 0
        for tp, queue in self._queues.items():
            if not queue:
                continue
            head = queue[0]
            linger_end_ms = head.created_ms + self.linger_ms
            if everything_ready or head.sealed or len(queue) > 1 or now_ms >= linger_end_ms:
                ready.append(tp)
            elif next_check_ms is None or linger_end_ms < next_check_ms:
                next_check_ms = linger_end_ms
        return ReadyCheck(ready, next_check_ms)

    def drain(self, tp: TopicPartition) -> ProducerBatch | None:
        """Take the partition's oldest batch for sending; it is sealed from now on."""
        queue = self._queues.get(tp)
        if not queue:
            return None
        batch = queue.popleft()
        batch.sealed = True
        return batch

    def expire(self, now_ms: int) -> list[ProducerBatch]:
        """Remove and return unsent batches older than ``delivery_timeout_ms`` (e.g. no leader for that long)."""
        expired: list[ProducerBatch] = []
        for queue in self._queues.values():
            while queue and queue[0].deadline_ms <= now_ms:
                expired.append(queue.popleft())
        return expired

    def deallocate(self, batch: ProducerBatch) -> None:
        """The batch is finished (acknowledged or failed): its records stop counting against memory."""
        batch.finished = True
        if batch in self._incomplete:
            self._incomplete.discard(batch)
            self.buffered_bytes -= batch.buffered_bytes

    def incomplete_batches(self) -> list[ProducerBatch]:
        return list(self._incomplete)

    def has_unsent(self) -> bool:
        return any(self._queues.values())

    def begin_flush(self) -> None:
        self._flushes_in_progress += 1

    def end_flush(self) -> None:
        self._flushes_in_progress -= 1

    def abort_unsent(self) -> list[ProducerBatch]:
        """Remove and return every batch not yet handed to the sender (``close`` with no time left)."""
        aborted = [batch for queue in self._queues.values() for batch in queue]
        self._queues.clear()
        return aborted
