"""One segment of a partition log: ``<base offset>.log`` with its ``.index``, ``.timeindex`` and ``.txnindex``.

Files are named by the segment's base offset in 20 digits, as Kafka names them. The
``.log`` file is record batch v2 bytes back to back, exactly as produced and stamped.

Durability: appends go straight to the OS with one ``os.write`` on a raw ``O_APPEND``
descriptor, never through a Python buffer, so a ``kill -9`` right after ``append``
returns loses nothing; ``sync_log`` adds the fsync that survives power loss.

The indexes are derived data and are made durable later than the log, on purpose.
Invariant: **a segment's indexes are written and fsynced before the recovery point
passes the segment** (``PartitionLog`` keeps it). Recovery rebuilds the indexes of the
segment holding the recovery point and of every later one from the log, and only
checks those of the segments wholly below it. So while a segment is active its index
entries stay in memory (lookups never read the file) and an acknowledgement flush
fsyncs the ``.log`` alone: one fsync per group commit. When the segment stops being
active (``seal``, at the roll, under the appender's lock) its index entries are
written, one ``os.write`` per index, and the first flush after the roll (or the roll
itself, when it lands right at the recovery point) fsyncs them before the recovery
point moves past the segment; ``close`` writes them too.

Concurrency: one appender (the owning ``PartitionLog`` holds its lock) and any
number of readers. Readers use ``pread`` and are handed ``committed_size_bytes``,
a size the appender published after the bytes were written, so they never see a
half-written batch. ``size_bytes`` and ``next_offset`` are updated only after the
write completes. The log descriptor is closed by a finalizer once the last reader
drops the segment, so a reader racing a retention delete never hits a reused fd.
"""

from __future__ import annotations

import bisect
import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from broker.errors import KafkaStorageError
from broker.record.header import BatchHeader, peek_size, read_header
from broker.storage.file_scan import ScannedBatch, TornBatch, scan_batches
from broker.storage.index import OffsetIndex
from broker.storage.time_index import NO_TIMESTAMP, TimeIndex
from broker.storage.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
LOOKUP_WINDOW_BYTES = 64 * 1024


class SegmentRead(NamedTuple):
    data: bytes
    first_batch_offset: int
    next_offset: int


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


def _write_all(fd: int, data: bytes | bytearray) -> int:
    """Write ``data`` whole; return how many ``os.write`` calls it took (one unless the OS writes short)."""
    view = memoryview(data)
    calls = 0
    while view:
        view = view[os.write(fd, view) :]
        calls += 1
    return calls


class LogSegment:
    """A ``.log`` file plus its sparse indexes; knows its ``next_offset`` and largest timestamp."""

    def __init__(self, directory: Path, base_offset: int, index_interval_bytes: int, *, new: bool = False) -> None:
        """Open the segment at ``base_offset`` in ``directory``, its files created if missing.

        ``new`` says the caller just created ``directory``, so no file of it exists: the
        ``.log`` is created without a look at its size and the indexes wait for the first seal.
        """
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = directory / segment_file_name(base_offset, LOG_SUFFIX)
        self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._close_fd = weakref.finalize(self, os.close, self._fd)
        self.index = OffsetIndex(directory / segment_file_name(base_offset, INDEX_SUFFIX), base_offset, new=new)
        self.time_index = TimeIndex(directory / segment_file_name(base_offset, TIME_INDEX_SUFFIX), base_offset, new=new)
        self.txn_index = TransactionIndex(directory / segment_file_name(base_offset, TXN_INDEX_SUFFIX))
        """Its aborted transactions; the owning log sets it up at open (``PartitionLog._transactions_from_disk``)."""
        self.size_bytes = 0 if new else os.fstat(self._fd).st_size
        self.next_offset = base_offset
        self.max_timestamp_ms = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.roll_base_ms: int | None = None
        """First batch's max timestamp: ``segment_ms`` counts from it (Kafka's rolling-based timestamp)."""
        self._bytes_since_index_entry = 0
        self._tail: list[ScannedBatch] = []
        """Every batch from the last offset-index entry (or the file start) on: a lookup there needs no scan."""
        self._dirty = False
        self.write_count = 0
        """``os.write`` calls on the ``.log`` file: one per ``append`` unless the OS writes short."""
        self.fsync_count = 0
        """``os.fsync`` calls on the ``.log`` file."""

    # -- writing -------------------------------------------------------------------------

    def append(self, data: bytes | bytearray, headers: Sequence[BatchHeader]) -> None:
        """Write whole batches (``headers`` positions relative to ``data``) and index them."""
        position = self.size_bytes
        try:
            self.write_count += _write_all(self._fd, data)
        except OSError as error:
            os.ftruncate(self._fd, position)
            raise KafkaStorageError(f"write to {self.log_path} failed: {error}") from error
        self._dirty = True
        for header in headers:
            self._track_batch(position + header.position, header)
        self.size_bytes = position + len(data)
        self.next_offset = headers[-1].next_offset

    def _track_batch(self, position: int, header: BatchHeader) -> None:
        if self.roll_base_ms is None:
            self.roll_base_ms = header.max_timestamp
        if header.max_timestamp > self.max_timestamp_ms:
            self.max_timestamp_ms = header.max_timestamp
            self.offset_of_max_timestamp = header.base_offset
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self.index.append(header.base_offset, position)
            self.time_index.maybe_append(self.max_timestamp_ms, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
            self._tail = []
        self._tail.append(ScannedBatch(position, header))
        self._bytes_since_index_entry += header.size

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding ``offset`` and all after it; return the new ``next_offset``.

        Truncation works on whole batches (as Kafka's ``LogSegment.truncateTo``): if
        ``offset`` falls inside a batch, the log ends at that batch's base offset.
        """
        found = self.find_batch(offset, self.size_bytes)
        if found is None:
            return self.next_offset
        os.ftruncate(self._fd, found.position)
        self._dirty = True
        self.size_bytes = found.position
        self.index.truncate_to_offset(found.header.base_offset)
        self.time_index.truncate_to_offset(found.header.base_offset)
        self.load_tail()
        return self.next_offset

    # -- loading and recovery ------------------------------------------------------------

    def load_tail(self) -> None:
        """Set ``next_offset``, largest timestamp and roll base from the indexes plus a short scan.

        At the last offset-index entry the time index held the largest timestamp so
        far (both are written together), so scanning from that entry to the end of
        the file completes the picture. Raises ``TornBatch`` if that tail is bad.
        """
        self.next_offset = self.base_offset
        self.max_timestamp_ms = self.time_index.last_timestamp
        last_indexed = self.time_index.last_offset()
        self.offset_of_max_timestamp = self.base_offset if last_indexed is None else last_indexed
        start = self.index.last_position()
        tail: list[ScannedBatch] = []
        for scanned in scan_batches(self._fd, start, self.size_bytes, check_crc=False):
            tail.append(scanned)
            if scanned.header.max_timestamp > self.max_timestamp_ms:
                self.max_timestamp_ms = scanned.header.max_timestamp
                self.offset_of_max_timestamp = scanned.header.base_offset
            self.next_offset = scanned.header.next_offset
        self._tail = tail
        self._bytes_since_index_entry = self.size_bytes - start
        self.roll_base_ms = None
        if self.size_bytes:
            first = next(scan_batches(self._fd, 0, self.size_bytes, check_crc=False, window_bytes=4096))
            self.roll_base_ms = first.header.max_timestamp

    def indexes_consistent(self) -> bool:
        """Both index files were present (or the log is empty) and the offset index is sound."""
        present = (self.index.existed and self.time_index.existed) or self.size_bytes == 0
        return present and self.index.is_consistent(self.size_bytes)

    def rebuild(self, *, check_crc: bool, on_batch: Callable[[BatchHeader], None]) -> TornBatch | None:
        """Re-read the whole file, rebuilding both indexes; return the first bad batch, if any.

        A batch is bad when it is torn, fails its header (or CRC) check, or does not
        start exactly where the previous one ended (offsets must be contiguous from
        the segment's base offset). The caller truncates there.
        """
        self.index.reset()
        self.time_index.reset()
        self.next_offset = self.base_offset
        self.max_timestamp_ms = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.roll_base_ms = None
        self._bytes_since_index_entry = 0
        self._tail = []
        try:
            for scanned in scan_batches(self._fd, 0, self.size_bytes, check_crc=check_crc):
                if scanned.header.base_offset != self.next_offset:
                    raise TornBatch(
                        scanned.position,
                        f"offsets not contiguous: expected base offset {self.next_offset}, "
                        f"found {scanned.header.base_offset}",
                    )
                self._track_batch(scanned.position, scanned.header)
                self.next_offset = scanned.header.next_offset
                on_batch(scanned.header)
        except TornBatch as torn:
            return torn
        return None

    def truncate_bytes(self, position: int) -> None:
        """Cut the file at ``position`` after ``rebuild`` found a bad batch there."""
        os.ftruncate(self._fd, position)
        self.size_bytes = position
        self._dirty = True

    # -- reading -------------------------------------------------------------------------

    def last_batch(self) -> ScannedBatch | None:
        """The segment's last batch with its position (None when empty): what its ``.txnindex`` is anchored in."""
        tail = self._tail
        return tail[-1] if tail else None

    def scanned_batches(self, committed_size_bytes: int) -> Iterator[ScannedBatch]:
        """Every batch header in the segment with its file position, in order, without reading the records."""
        return scan_batches(self._fd, 0, committed_size_bytes, check_crc=False)

    def batch_headers(self, committed_size_bytes: int) -> Iterator[BatchHeader]:
        """Every batch header in the segment, in order, without reading the records."""
        for scanned in scan_batches(self._fd, 0, committed_size_bytes, check_crc=False):
            yield scanned.header

    def find_batch(self, offset: int, committed_size_bytes: int) -> ScannedBatch | None:
        """The batch holding ``offset``: from memory past the last index entry, else index lookup and a header scan.

        None if past the committed end. The in-memory tail holds exactly the batches the
        scan from the last index entry would read, so both ways find the same batch; a
        caught-up follower's read (always in the tail) costs no ``pread`` to find it.
        """
        tail = self._tail  # replaced, never emptied in place: a concurrent append cannot pull it away
        if tail and offset >= tail[0].header.base_offset:
            slot = bisect.bisect_left(tail, offset, key=lambda scanned: scanned.header.last_offset)
            if slot < len(tail) and tail[slot].position < committed_size_bytes:
                return tail[slot]
            return None
        start = self.index.lookup(offset)
        window_bytes = self.index_interval_bytes + LOOKUP_WINDOW_BYTES
        for scanned in scan_batches(self._fd, start, committed_size_bytes, check_crc=False, window_bytes=window_bytes):
            if scanned.header.last_offset >= offset:
                return scanned
        return None

    def read(
        self, start_offset: int, max_bytes: int, bound_offset: int, committed_size_bytes: int
    ) -> SegmentRead | None:
        """Whole batches from the one holding ``start_offset``, each ending below ``bound_offset``.

        At most ``max_bytes`` unless the first batch alone is larger: then it is
        returned whole, so a reader always makes progress. None when ``start_offset``
        lies past this segment's committed batches.
        """
        first = self.find_batch(start_offset, committed_size_bytes)
        if first is None:
            return None
        if first.header.last_offset >= bound_offset:
            return SegmentRead(b"", first.header.base_offset, start_offset)
        available = committed_size_bytes - first.position
        buf = os.pread(self._fd, min(max(max_bytes, first.header.size), available), first.position)
        end = first.header.size
        next_offset = first.header.next_offset
        while True:
            size = peek_size(buf, end)
            if size is None or end + size > len(buf):
                break
            header = read_header(buf, end)
            if header.last_offset >= bound_offset:
                break
            end += size
            next_offset = header.next_offset
        return SegmentRead(buf if end == len(buf) else buf[:end], first.header.base_offset, next_offset)

    def find_batch_by_timestamp(self, timestamp_ms: int, committed_size_bytes: int) -> ScannedBatch | None:
        """The first batch whose ``max_timestamp >= timestamp_ms``; None if this segment has none."""
        if self.max_timestamp_ms < timestamp_ms:
            return None
        start = self.index.lookup(self.time_index.lookup_before(timestamp_ms))
        for scanned in scan_batches(self._fd, start, committed_size_bytes, check_crc=False):
            if scanned.header.max_timestamp >= timestamp_ms:
                return scanned
        return None

    def pread(self, size_bytes: int, position: int) -> bytes:
        return os.pread(self._fd, size_bytes, position)

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def needs_flush(self) -> bool:
        return self._dirty or self.index.dirty or self.time_index.dirty

    def seal(self) -> None:
        """Write the pending index entries, one ``os.write`` per index; the caller excludes appenders.

        Called when the segment stops being the active one (and on a whole-segment
        flush or close), so its index files are complete before ``sync_indexes``.
        """
        try:
            self.index.write_pending()
            self.time_index.write_pending()
        except OSError as error:
            raise KafkaStorageError(f"writing the indexes of {self.log_path} failed: {error}") from error

    def sync_log(self) -> bool:
        """fsync the ``.log`` if it changed since the last one; return whether it did."""
        if not self._dirty:
            return False
        self._dirty = False
        os.fsync(self._fd)
        self.fsync_count += 1
        return True

    def sync_indexes(self) -> bool:
        """fsync the index files written by ``seal`` (or cut) since their last fsync; return whether any was."""
        offsets_synced = self.index.fsync()
        return self.time_index.fsync() or offsets_synced

    def flush(self) -> None:
        """Make the whole segment durable: seal, then fsync the log file and both indexes."""
        self.seal()
        self.sync_log()
        self.sync_indexes()

    def close(self) -> None:
        self.index.close()
        self.time_index.close()
        self._close_fd()

    def delete(self) -> None:
        """Unlink the files; the log descriptor closes once no reader holds this segment."""
        self.index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.log_path.unlink(missing_ok=True)
