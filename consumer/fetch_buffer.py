"""A fetched chunk of raw batches, handed out to the application a few records at a time. Pure.

A fetch answer holds whole batches, all below the high watermark; the first batch may
start before the offset asked for (batches are never split), so records below the
consumer's position are skipped. Control batches hold no application records and are
skipped too.

Nothing is decoded when the bytes arrive, and little when they are handed out: each
batch's header and CRC are checked (``broker.record.lazy``), and a batch that lies
wholly at or after the position, below the high watermark and within the record
budget is handed out as views (``consumer.records.FetchedRecord``) without reading its
records. A dense batch (every batch a producer writes) is never decoded here, even
when it must be split at the position, the high watermark or the ``max_records``
budget: its record offsets follow from its header. Only a compacted batch that must be
split is decoded here, to find its offsets; the others are decoded on the
application's first field read. The leader epoch is a
batch's, so the truncation check runs once per batch.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import repeat

from broker.client.types import FetchResult, TopicPartition
from broker.errors import CorruptRecord
from broker.record.committed import AbortedFilter
from broker.record.lazy import checked_batch
from consumer.records import ConsumerRecord, FetchedRecord, PartitionBatch
from consumer.truncation import epoch_went_back


@dataclass(frozen=True, slots=True)
class Taken:
    records: list[ConsumerRecord]
    exhausted: bool
    """Every record of the fetch was handed out or skipped; ``next_offset`` is where reading goes on."""
    next_offset: int
    consumed_to: int
    """The offset after the last record handed out: the position once ``records`` are consumed."""
    leader_epoch: int | None = None
    """Leader epoch of the batch of the last record handed out (``None`` if there is none)."""
    divergent_offset: int | None = None
    """Offset of the first record of a batch whose leader epoch went back: the log under the consumer was rewritten."""


_Span = tuple[PartitionBatch, int, int]
"""A batch and the indexes ``[start, stop)`` of its records that may be handed out next."""


@dataclass(eq=False)
class CompletedFetch:
    tp: TopicPartition
    generation: int
    fetch_offset: int
    result: FetchResult
    read_committed: bool = False
    """Records below the last stable offset only, the aborted transactions' dropped (``AbortedFilter``)."""
    _data: memoryview | None = field(default=None, repr=False)
    _aborted: AbortedFilter | None = field(default=None, repr=False)
    _next_batch_at: int = 0
    """Byte position of the first batch not yet read; it moves only past batches that were read whole."""
    _batch: PartitionBatch | None = field(default=None, repr=False)
    """The batch being handed out; ``_index`` is its next record."""
    _index: int = 0

    @property
    def size_bytes(self) -> int:
        return len(self.result.data)

    def take(self, position: int, max_records: int, last_leader_epoch: int | None) -> Taken:
        """Up to ``max_records`` records at or after ``position``, in offset order.

        A corrupt batch raises ``CorruptRecord`` when the take reaches it; records of the
        batches before it are handed out first, and every later take raises again (the
        cursor never moves past a batch it could not read).
        """
        lower = max(position, self.fetch_offset)
        high_watermark = self.result.last_stable_offset if self.read_committed else self.result.high_watermark
        taken: list[ConsumerRecord] = []
        epoch = last_leader_epoch
        consumed_to = position
        exhausted = False
        while True:
            try:
                span = self._next_span(lower, high_watermark)
            except CorruptRecord:
                if taken:
                    break
                raise
            if span is None:
                exhausted = True
                break
            if len(taken) >= max_records:
                break
            batch, start, stop = span
            if epoch_went_back(epoch, batch.leader_epoch):
                divergent = batch.first_offset + start if batch.dense else batch.decode().offsets[start]
                return Taken(taken, False, position, consumed_to, epoch, divergent_offset=divergent)
            stop = min(stop, start + max_records - len(taken))
            taken.extend(map(FetchedRecord, repeat(batch, stop - start), range(start, stop)))
            epoch = batch.leader_epoch
            count = batch.records_count
            if batch.dense:
                consumed_to = batch.first_offset + stop
            elif stop == count and batch.columns is None:
                consumed_to = batch.last_offset + 1
            else:
                consumed_to = batch.decode().offsets[stop - 1] + 1
            if stop == count:
                self._batch = None
            else:
                self._index = stop
        next_offset = max(position, consumed_to)
        if exhausted:
            next_offset = max(next_offset, self.result.next_offset)
        return Taken(taken, exhausted, next_offset, consumed_to, epoch if taken else None)

    def _next_span(self, lower: int, high_watermark: int) -> _Span | None:
        """The records at or after ``lower`` and below the HW to hand out next; ``None`` when none are left."""
        while True:
            batch = self._batch
            if batch is None:
                batch = self._open_next_batch(lower, high_watermark)
                if batch is None:
                    return None
            count = batch.records_count
            first = batch.first_offset
            if self._index == 0 and first >= lower and batch.last_offset < high_watermark:
                return batch, 0, count
            if batch.dense:
                start = max(self._index, lower - first)
                stop = min(count, high_watermark - first)
            else:
                offsets = batch.decode().offsets
                start = max(self._index, bisect_left(offsets, lower))
                stop = bisect_left(offsets, high_watermark)
            if start < stop:
                return batch, start, stop
            self._batch = None
            if stop < count:
                self._next_batch_at = len(self.result.data)
                return None

    def _open_next_batch(self, lower: int, high_watermark: int) -> PartitionBatch | None:
        """The next batch that may hold records in ``[lower, high_watermark)``; control batches are passed over."""
        data = self._data
        if data is None:
            data = self._data = memoryview(self.result.data)
            if self.read_committed:
                self._aborted = AbortedFilter(self.result.aborted)
        end = len(data)
        while self._next_batch_at < end:
            header, view = checked_batch(data, self._next_batch_at)
            if header.base_offset >= high_watermark:
                break
            self._next_batch_at += header.size
            if self._aborted is not None and not self._aborted.keeps(header):
                continue
            if header.is_control or header.records_count == 0:
                continue
            if header.base_offset + header.last_offset_delta < lower:
                continue
            topic, partition = self.tp
            self._index = 0
            self._batch = PartitionBatch(
                topic, partition, view, header, header.timestamp_type, header.partition_leader_epoch
            )
            return self._batch
        self._next_batch_at = end
        return None
