"""The delivery of one ``Producer.send_many`` call: one future, however many batches its records fill.

A call's records may land in several batches (and partitions). Each batch holds one
``ManyChunk`` token for its run of the call's records; the call's future resolves once
the call has finished appending (``close``) and every chunk has been answered, or fails
with the first error. No per-record object is built here: a chunk remembers the call
positions it covers and, once acknowledged, its base offset.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from broker.errors import HighwaterError
from producer.records import Segment, SendManyResult


class ManyCall:
    __slots__ = ("closed", "count", "future", "pending", "segments", "topic")

    def __init__(self, future: asyncio.Future[SendManyResult], topic: str, count: int) -> None:
        self.future = future
        self.topic = topic
        self.count = count
        self.pending = 0
        self.closed = False
        self.segments: list[Segment] = []

    def chunk_of(self, indices: Sequence[int], offset: int, start: int, stop: int) -> ManyChunk:
        """The token of the run ``indices[offset + start : offset + stop]`` of this call's records inside one batch."""
        self.pending += 1
        return ManyChunk(self, indices[offset + start : offset + stop])

    def close(self) -> None:
        """Every record is appended: the future may resolve once the chunks are answered."""
        self.closed = True
        self._resolve_if_done()

    def _resolve_if_done(self) -> None:
        if self.closed and self.pending == 0 and not self.future.done():
            self.future.set_result(SendManyResult(self.topic, self.count, self.segments))


class ManyChunk:
    __slots__ = ("call", "indices")

    def __init__(self, call: ManyCall, indices: Sequence[int]) -> None:
        self.call = call
        self.indices = indices

    def complete(self, partition: int, base_offset: int, timestamp: int, error: HighwaterError | None) -> None:
        """The batch holding this chunk was acknowledged (``base_offset`` is its first record's) or failed."""
        call = self.call
        call.pending -= 1
        if call.future.done():
            return
        if error is not None:
            call.future.set_exception(error)
            return
        call.segments.append(Segment(partition, base_offset, timestamp, self.indices))
        call._resolve_if_done()
