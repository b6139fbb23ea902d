"""``RecordAccumulator``: records gathered into per-partition batches until they are worth sending.

Pure (no asyncio, no clock): time enters as ``now_ms``. Kafka's rules
(``RecordAccumulator.ready``): the head batch of a partition is ready to send when

* it is full (the next record did not fit in ``batch_size``), or a newer batch is
  queued behind it,
* it has waited ``linger_ms`` since its first record,
* a ``flush`` is in progress, or the producer is closing.

Memory: every record's estimated size is counted in ``buffered_bytes`` from ``append``
until its batch is acknowledged or fails (``deallocate``). The producer makes ``send``
wait while ``has_room`` is false: that is the ``buffer_memory`` back-pressure.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from broker.client.types import TopicPartition
from broker.record.codec import RecordInput
from producer.batch import ProducerBatch


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
        self._created = 0

    def has_room(self, size_bytes: int) -> bool:
        """Whether a record of ``size_bytes`` fits in ``buffer_memory`` now (always, when nothing is buffered)."""
        return self.buffered_bytes == 0 or self.buffered_bytes + size_bytes <= self.buffer_memory

    def append(
        self, tp: TopicPartition, record: RecordInput, size_bytes: int, delivery: Any, now_ms: int
    ) -> AppendResult:
        queue = self._queues.setdefault(tp, deque())
        last = queue[-1] if queue else None
        self.buffered_bytes += size_bytes
        if last is not None and last.try_append(record, size_bytes, delivery, self.batch_size):
            if last.estimated_size_bytes >= self.batch_size:
                last.sealed = True
            return AppendResult(last, new_batch=False, batch_full=last.sealed)
        if last is not None:
            last.sealed = True
        self._created += 1
        batch = ProducerBatch(tp, self._created, now_ms, now_ms + self.delivery_timeout_ms)
        batch.try_append(record, size_bytes, delivery, self.batch_size)
        if batch.estimated_size_bytes >= self.batch_size:
            batch.sealed = True
        queue.append(batch)
        self._incomplete.add(batch)
        return AppendResult(batch, new_batch=True, batch_full=batch.sealed or last is not None)

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
