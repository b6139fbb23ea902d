"""A fetched chunk of raw batches, handed out to the application a few records at a time. Pure.

A fetch answer holds whole batches, all below the high watermark; the first batch may
start before the offset asked for (batches are never split), so records below the
consumer's position are skipped. Control batches hold no application records and are
skipped too. Records are decoded on first use, in the application's task, not when
the bytes arrive: a consumer that seeks away never pays for decoding them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from broker.client.types import FetchResult, TopicPartition
from broker.record.codec import iter_batches_with_records
from consumer.records import ConsumerRecord
from consumer.truncation import epoch_went_back


@dataclass(frozen=True, slots=True)
class Taken:
    records: list[ConsumerRecord]
    exhausted: bool
    """Every record of the fetch was handed out or skipped; ``next_offset`` is where reading goes on."""
    next_offset: int
    divergent_offset: int | None = None
    """Base offset of a batch whose leader epoch went back: the log under the consumer was rewritten."""


@dataclass(eq=False)
class CompletedFetch:
    tp: TopicPartition
    generation: int
    fetch_offset: int
    result: FetchResult
    _records: list[ConsumerRecord] | None = field(default=None, repr=False)
    _cursor: int = 0

    @property
    def size_bytes(self) -> int:
        return len(self.result.data)

    def _decoded(self) -> list[ConsumerRecord]:
        if self._records is None:
            topic, partition = self.tp
            high_watermark = self.result.high_watermark
            self._records = [
                ConsumerRecord(
                    topic,
                    partition,
                    record.offset,
                    record.timestamp,
                    header.timestamp_type,
                    record.key,
                    record.value,
                    record.headers,
                    header.partition_leader_epoch,
                )
                for header, records in iter_batches_with_records(self.result.data)
                if not header.is_control
                for record in records
                if self.fetch_offset <= record.offset < high_watermark
            ]
        return self._records

    def take(self, position: int, max_records: int, last_leader_epoch: int | None) -> Taken:
        """Up to ``max_records`` records at or after ``position``, in offset order."""
        records = self._decoded()
        while self._cursor < len(records) and records[self._cursor].offset < position:
            self._cursor += 1
        taken: list[ConsumerRecord] = []
        epoch = last_leader_epoch
        while self._cursor < len(records) and len(taken) < max_records:
            record = records[self._cursor]
            if epoch_went_back(epoch, record.leader_epoch):
                return Taken(taken, False, position, divergent_offset=record.offset)
            taken.append(record)
            epoch = record.leader_epoch
            self._cursor += 1
        exhausted = self._cursor >= len(records)
        next_offset = max(position, taken[-1].offset + 1 if taken else position)
        if exhausted:
            next_offset = max(next_offset, self.result.next_offset)
        return Taken(taken, exhausted, next_offset)
