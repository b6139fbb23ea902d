"""What ``Producer.send`` and ``send_many`` resolve to, and the compression names the settings use."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import NamedTuple

from broker.record.compression import GZIP, LZ4, NONE, ZSTD

COMPRESSION_CODECS = {"none": NONE, "gzip": GZIP, "lz4": LZ4, "zstd": ZSTD}
UNKNOWN_OFFSET = -1
"""The offset reported for acks=0: the producer does not wait to learn it (Kafka reports -1 too)."""


class RecordMetadata(NamedTuple):
    """Where a record landed: ``offset`` is -1 for acks=0; ``timestamp`` in ms since the epoch.

    ``timestamp`` is the broker's append time for topics with ``LogAppendTime``, else
    the record's own (create) time.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int


class Segment(NamedTuple):
    """Records of one bulk send that landed in one batch: call positions ``indices``, offsets from ``base_offset``."""

    partition: int
    base_offset: int
    timestamp: int
    indices: Sequence[int]


class SendManyResult:
    """What ``Producer.send_many`` resolves to: where each of its records landed, computed on demand.

    No ``RecordMetadata`` exists until asked for: record ``i`` of a segment has offset
    ``base_offset + position of i in the segment`` (``-1`` throughout for acks=0).
    """

    __slots__ = ("_by_index", "count", "segments", "topic")

    def __init__(self, topic: str, count: int, segments: list[Segment]) -> None:
        self.topic = topic
        self.count = count
        self.segments = segments
        self._by_index: list[RecordMetadata] | None = None

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> RecordMetadata:
        """Record ``index``'s metadata, found among the segments (each holds ascending positions)."""
        if self._by_index is not None:
            return self._by_index[index]
        if not 0 <= index < self.count:
            raise IndexError(index)
        for segment in self.segments:
            indices = segment.indices
            position = bisect_left(indices, index)
            if position < len(indices) and indices[position] == index:
                offset = UNKNOWN_OFFSET if segment.base_offset == UNKNOWN_OFFSET else segment.base_offset + position
                return RecordMetadata(self.topic, segment.partition, offset, segment.timestamp)
        raise IndexError(index)

    def metadata(self) -> list[RecordMetadata]:
        """Every record's ``RecordMetadata``, in the order they were given to ``send_many``."""
        if self._by_index is None:
            found: list[RecordMetadata | None] = [None] * self.count
            for segment in self.segments:
                for position, index in enumerate(segment.indices):
                    offset = UNKNOWN_OFFSET if segment.base_offset == UNKNOWN_OFFSET else segment.base_offset + position
                    found[index] = RecordMetadata(self.topic, segment.partition, offset, segment.timestamp)
            assert all(item is not None for item in found)
            self._by_index = found  # type: ignore[assignment]
        return self._by_index  # type: ignore[return-value]

    def offsets(self) -> list[int]:
        return [metadata.offset for metadata in self.metadata()]

    def partitions(self) -> list[int]:
        return [metadata.partition for metadata in self.metadata()]
