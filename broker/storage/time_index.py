"""The time index of a segment: ``<base offset>.timeindex``.

Each 12-byte entry is (timestamp int64, relative offset int32), big-endian as in
Kafka's ``TimeIndex``: ``timestamp`` is the largest batch ``max_timestamp`` seen in
the segment so far and ``offset`` the base offset of the batch that carried it.
An entry is added alongside each offset-index entry, only when the largest
timestamp grew.

Invariants: timestamps strictly increase along the file, offsets never decrease.
So every batch before an entry's offset has ``max_timestamp <= entry.timestamp``,
which is what makes ``lookup`` safe: scanning from the returned offset cannot miss
a batch with a larger-or-equal timestamp.
"""

from __future__ import annotations

import bisect
import struct
from array import array
from pathlib import Path

from broker.storage.index import IndexFile

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


class TimeIndex(IndexFile):
    """Largest timestamp so far -> relative offset of the batch that carried it."""

    entry_bytes = _ENTRY.size

    def __init__(self, path: Path, base_offset: int, *, new: bool = False) -> None:
        super().__init__(path, base_offset, new=new)
        self._timestamps = array("q")
        self._relative_offsets = array("i")
        for timestamp, relative_offset in _ENTRY.iter_unpack(b"" if new else self._read_all()):
            self._timestamps.append(timestamp)
            self._relative_offsets.append(relative_offset)

    def __len__(self) -> int:
        return len(self._timestamps)

    def is_consistent(self, next_offset: int) -> bool:
        """Whole entries, timestamps strictly increasing, offsets non-decreasing and below ``next_offset``."""
        if self.loaded_size_bytes % self.entry_bytes:
            return False
        relative_end = next_offset - self.base_offset
        for i in range(len(self._timestamps)):
            if not 0 <= self._relative_offsets[i] < relative_end:
                return False
            if i and (
                self._timestamps[i] <= self._timestamps[i - 1]
                or self._relative_offsets[i] < self._relative_offsets[i - 1]
            ):
                return False
        return True

    @property
    def last_timestamp(self) -> int:
        return self._timestamps[-1] if self._timestamps else NO_TIMESTAMP

    def last_offset(self) -> int | None:
        return self.base_offset + self._relative_offsets[-1] if self._relative_offsets else None

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry if ``timestamp`` is larger than the last one (the largest-so-far rule)."""
        if timestamp <= self.last_timestamp:
            return
        relative_offset = offset - self.base_offset
        if self._relative_offsets and relative_offset < self._relative_offsets[-1]:
            raise ValueError(f"time index offset {offset} goes backwards in {self.path}")
        self._write(_ENTRY.pack(timestamp, relative_offset))
        self._timestamps.append(timestamp)
        self._relative_offsets.append(relative_offset)

    def lookup_before(self, timestamp: int) -> int:
        """Offset of the last entry whose timestamp is strictly below ``timestamp`` (segment base if none).

        Every batch before that offset has a smaller timestamp, so a scan for the first
        batch with ``max_timestamp >= timestamp`` may start there.
        """
        slot = bisect.bisect_left(self._timestamps, timestamp) - 1
        return self.base_offset + self._relative_offsets[slot] if slot >= 0 else self.base_offset

    def truncate_to_offset(self, offset: int) -> None:
        """Forget entries whose batch starts at or after ``offset``."""
        relative_offset = offset - self.base_offset
        keep = len(self._relative_offsets)
        while keep and self._relative_offsets[keep - 1] >= relative_offset:
            keep -= 1
        if keep < len(self._relative_offsets):
            del self._timestamps[keep:]
            del self._relative_offsets[keep:]
            self._truncate_file(keep)

    def reset(self) -> None:
        del self._timestamps[:]
        del self._relative_offsets[:]
        self._truncate_file(0)
        self.loaded_size_bytes = 0
