"""The sparse offset index of a segment: ``<base offset>.index``.

Each 8-byte entry is (relative offset int32, file position int32), big-endian as in
Kafka's ``OffsetIndex``: the batch whose base offset is ``segment base + relative
offset`` starts at ``position`` in the ``.log`` file. One entry is written every
``index_interval_bytes`` of log, so a lookup costs a binary search plus a scan of at
most that many bytes.

Invariants: relative offsets and positions both strictly increase along the file.
The entries are kept in memory (two ``array``s) and lookups only ever use those; the
file is read at load and only appended to (``O_APPEND``) afterwards. New entries wait
in memory as pending bytes and reach the file in one ``os.write`` when the segment
rolls, is flushed whole, or closes: the file is for the next start, never for a
reader. The pending bytes are bounded by segment size / index interval x entry size.
An index is derived data: when it is missing or fails ``is_consistent`` the segment
rebuilds it from the log; ``LogSegment`` states when its file must be durable.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from pathlib import Path


class IndexFile:
    """An append-only file of fixed-size entries behind an in-memory copy; the shared file handling.

    The file is opened only for the moment it is read, written, cut or fsynced, never
    held: lookups use the in-memory copy, and the file is touched at load, at a roll,
    at a whole flush and at close. So a partition replica holds one descriptor (its
    active ``.log``), not three, and 10 000 partition replicas fit a broker's default
    open-files limit. An fsync through a descriptor opened for it makes the file's
    written data durable all the same (it syncs the file, not the descriptor).

    ``dirty`` is True while the file (plus its pending bytes) differs from what the
    last fsync made durable. ``write_count`` and ``fsync_count`` count the real
    ``os.write`` / ``os.fsync`` calls on the file, so tests and benchmarks can see them.
    """

    entry_bytes: int = 0

    def __init__(self, path: Path, base_offset: int, *, new: bool = False) -> None:
        """Open the index at ``path`` (created empty if missing); with ``new`` the caller knows there
        is no file yet, and it is created at the first ``write_pending`` instead (the segment seals
        before every close), so a new partition costs one file, not three, until then."""
        self.path = path
        self.base_offset = base_offset
        self.existed = not new and path.exists()
        """False when the file had to be created: a missing index of a non-empty log is rebuilt."""
        self._on_disk = not new
        self.loaded_size_bytes = 0
        if not new:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
            try:
                self.loaded_size_bytes = os.fstat(fd).st_size
            finally:
                os.close(fd)
        self._file_bytes = self.loaded_size_bytes
        self._pending = bytearray()
        self._unsynced = False
        self._closed = False
        self.write_count = 0
        self.fsync_count = 0

    @property
    def dirty(self) -> bool:
        return self._unsynced or bool(self._pending)

    def _read_all(self) -> bytes:
        whole_bytes = self.loaded_size_bytes - self.loaded_size_bytes % self.entry_bytes
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return os.pread(fd, whole_bytes, 0)
        finally:
            os.close(fd)

    def _write(self, entry: bytes) -> None:
        self._pending += entry

    def _truncate_file(self, entry_count: int) -> None:
        """Keep the first ``entry_count`` entries: cut the pending bytes, and the file if needed."""
        keep_bytes = entry_count * self.entry_bytes
        if keep_bytes < self._file_bytes:
            os.truncate(self.path, keep_bytes)
            self._file_bytes = keep_bytes
            self._unsynced = True
            self._pending.clear()
        else:
            del self._pending[keep_bytes - self._file_bytes :]

    def write_pending(self) -> None:
        """Hand the pending entries to the OS in one ``os.write``; the caller excludes appenders.

        All or nothing: a failed write is cut off the file again and the entries stay
        pending, so the file never holds a partial or repeated entry. A new index's file is
        created here, empty if nothing is pending: an empty file needs no fsync.
        """
        if (not self._pending and self._on_disk) or self._closed:
            return
        view = memoryview(bytes(self._pending))
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._on_disk = True
        if not view:
            os.close(fd)
            return
        try:
            while view:
                written = os.write(fd, view)
                self.write_count += 1
                view = view[written:]
        except OSError:
            os.ftruncate(fd, self._file_bytes)
            raise
        finally:
            os.close(fd)
        self._file_bytes += len(self._pending)
        self._pending.clear()
        self._unsynced = True

    def fsync(self) -> bool:
        """fsync what ``write_pending`` (or a truncation) changed in the file; return whether it did."""
        if not self._unsynced or self._closed:
            return False
        self._unsynced = False
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.fsync_count += 1
        return True

    def flush(self) -> None:
        self.write_pending()
        self.fsync()

    def close(self) -> None:
        """Write the pending entries (the next start reads the file); nothing touches the file after."""
        if not self._closed:
            self.write_pending()
            self._closed = True

    def delete(self) -> None:
        self._pending.clear()
        self._closed = True
        self.path.unlink(missing_ok=True)


_ENTRY = struct.Struct(">ii")


class OffsetIndex(IndexFile):
    """Relative offset -> file position, one entry per ``index_interval_bytes`` of log."""

    entry_bytes = _ENTRY.size

    def __init__(self, path: Path, base_offset: int, *, new: bool = False) -> None:
        super().__init__(path, base_offset, new=new)
        self._relative_offsets = array("i")
        self._positions = array("i")
        for relative_offset, position in _ENTRY.iter_unpack(b"" if new else self._read_all()):
            self._relative_offsets.append(relative_offset)
            self._positions.append(position)

    def __len__(self) -> int:
        return len(self._relative_offsets)

    def is_consistent(self, log_size_bytes: int) -> bool:
        """Whole entries, strictly increasing, every position inside the log file."""
        if self.loaded_size_bytes % self.entry_bytes:
            return False
        offsets, positions = self._relative_offsets, self._positions
        for i in range(len(offsets)):
            if offsets[i] < 0 or positions[i] >= log_size_bytes:
                return False
            if i and (offsets[i] <= offsets[i - 1] or positions[i] <= positions[i - 1]):
                return False
        return True

    def append(self, offset: int, position: int) -> None:
        """Add an entry; ``offset`` and ``position`` must exceed the last entry's."""
        relative_offset = offset - self.base_offset
        if self._relative_offsets and (
            relative_offset <= self._relative_offsets[-1] or position <= self._positions[-1]
        ):
            raise ValueError(f"index entry ({offset}, {position}) does not follow the last one in {self.path}")
        self._write(_ENTRY.pack(relative_offset, position))
        self._relative_offsets.append(relative_offset)
        self._positions.append(position)

    def lookup(self, offset: int) -> int:
        """Position of the last indexed batch starting at or before ``offset`` (0 if none)."""
        slot = bisect.bisect_right(self._relative_offsets, offset - self.base_offset) - 1
        return self._positions[slot] if slot >= 0 else 0

    def last_position(self) -> int:
        return self._positions[-1] if self._positions else 0

    def last_offset(self) -> int | None:
        return self.base_offset + self._relative_offsets[-1] if self._relative_offsets else None

    def truncate_to_offset(self, offset: int) -> None:
        """Forget entries for batches starting at or after ``offset``."""
        keep = bisect.bisect_left(self._relative_offsets, offset - self.base_offset)
        if keep < len(self._relative_offsets):
            del self._relative_offsets[keep:]
            del self._positions[keep:]
            self._truncate_file(keep)

    def reset(self) -> None:
        del self._relative_offsets[:]
        del self._positions[:]
        self._truncate_file(0)
        self.loaded_size_bytes = 0
