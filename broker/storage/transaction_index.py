"""The aborted transactions of one segment: in memory while it is active, ``<base offset>.txnindex`` once rolled.

Kafka's transaction index (KIP-98). A ``read_committed`` fetch must carry every aborted
transaction with records in the range it returns; keeping every aborted transaction of
the log in memory grows with the log (one object per abort, for as long as retention
keeps its segment). So only the active segment's aborted transactions are held; when a
segment rolls they go to its file, and a read of an older range reads the files of the
segments it touches. A segment that never saw an abort has no file and costs no read.

File format (big-endian; highwater's own: Kafka's file has no header):
- header: magic ``HWTX``, version (u8), the anchor (the segment's last batch: position
  q, base offset q, partition leader epoch i, CRC-32C I; position -1 for an empty
  segment), CRC-32 of the entries (I);
- entries of 32 bytes: producer id, first offset, marker offset, last stable offset
  (four q), in marker order.

Invariants:
- a rolled segment holding an ABORT marker has its file, written whole through a
  temporary file, fsynced with its directory entry before the roll's transactions
  snapshot is written (``persist``); a rolled segment with none has no file. A file is
  only ever replaced whole (``os.replace``), so a reader that opened it reads one version;
- a file is trusted at open only if it ``verify``-es: its CRC matches and its anchor is
  the segment's last batch. Two logs holding the same batch hold the same log below it,
  so a file anchored in its segment describes exactly that segment; anything else (a
  damaged file, one left from a segment since cut and regrown) makes the log replay its
  transactions from the start and write the files again. A missing file reads as none:
  the fsync at the roll makes a file durable before any snapshot that relies on it;
- entries are in marker order, and each one's ``last_stable_offset`` is at most the first
  offset of any transaction aborted after it, so a search stops at the first entry whose
  ``last_stable_offset`` reaches the end of the range (``collect_aborted``), as Kafka's does.
"""

from __future__ import annotations

import bisect
import os
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from broker.errors import KafkaStorageError
from broker.storage.checkpoint import write_atomically
from broker.storage.file_scan import ScannedBatch
from broker.storage.transactions import AbortedTransaction

TXN_INDEX_SUFFIX = ".txnindex"
MAGIC = b"HWTX"
VERSION = 1
HEADER = struct.Struct(">4sBqqiII")
ENTRY = struct.Struct(">qqqq")
READ_CHUNK_ENTRIES = 256
"""The most entries read per ``pread`` while a search walks a file forward from its first match."""

Anchor = tuple[int, int, int, int]
"""(position, base offset, partition leader epoch, CRC-32C) of a segment's last batch; (-1, -1, 0, 0) when empty."""


def anchor_of(last_batch: ScannedBatch | None) -> Anchor:
    if last_batch is None:
        return (-1, -1, 0, 0)
    header = last_batch.header
    return (last_batch.position, header.base_offset, header.partition_leader_epoch, header.crc)


class Entries(Protocol):
    """What a search needs of the entries: a length and entries by position (a list, or a file read on demand)."""

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> AbortedTransaction: ...


def collect_aborted(entries: Entries, start: int, end: int, found: list[AbortedTransaction]) -> bool:
    """Add the entries with records in ``[start, end)`` to ``found``; True once the search is complete.

    An entry overlaps when its marker is at or after ``start`` and its first offset is
    before ``end``. Complete when an entry's ``last_stable_offset`` reaches ``end``:
    every later transaction started at or after it (the invariant above), so no later
    segment can hold one with records in the range.
    """
    first = bisect.bisect_left(entries, start, key=lambda txn: txn.last_offset)
    for index in range(first, len(entries)):
        txn = entries[index]
        if txn.first_offset < end:
            found.append(txn)
        if txn.last_stable_offset >= end:
            return True
    return False


class _EntryFile:
    """The entries of an open ``.txnindex`` descriptor, read on demand.

    A bisect jumps about: each of its log2(n) probes reads one entry. A walk forward
    from there reads twice as many entries each time, up to ``READ_CHUNK_ENTRIES``: a
    search usually stops after a few.
    """

    def __init__(self, fd: int, count: int) -> None:
        self._fd = fd
        self._count = count
        self._chunk_start = 0
        self._chunk: list[AbortedTransaction] = []

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: int, /) -> AbortedTransaction:
        chunk_end = self._chunk_start + len(self._chunk)
        if not self._chunk_start <= index < chunk_end:
            count = min(max(2 * len(self._chunk), 8), READ_CHUNK_ENTRIES) if index == chunk_end else 1
            count = min(count, self._count - index)
            data = os.pread(self._fd, count * ENTRY.size, HEADER.size + index * ENTRY.size)
            self._chunk_start = index
            self._chunk = [AbortedTransaction(*fields) for fields in ENTRY.iter_unpack(data)]
        return self._chunk[index - self._chunk_start]


class TransactionIndex:
    """One segment's aborted transactions; the owning log changes it under its lock, readers never lock.

    Active (``_active`` is a list): appended to in memory, read in place. Rolled
    (``_active`` is None): ``_count`` entries in the file, none in memory. The switch
    writes the file before it drops the list, so a reader that finds no list finds the file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._active: list[AbortedTransaction] | None = []
        self._count = 0

    @property
    def active_entries(self) -> list[AbortedTransaction]:
        """The entries held in memory (none once rolled): what the transactions snapshot records."""
        return list(self._active or ())

    def append(self, txn: AbortedTransaction) -> None:
        """An ABORT marker was appended to this (active) segment."""
        if self._active is None:
            raise RuntimeError(f"{self.path} belongs to a rolled segment: nothing is appended to it")
        self._active.append(txn)

    def activate(self, entries: list[AbortedTransaction]) -> None:
        """Make this the active segment's index holding ``entries`` (open, truncation); its file goes."""
        self._active = list(entries)
        self._count = 0
        self.path.unlink(missing_ok=True)

    def persist(self, last_batch: ScannedBatch | None, entries: list[AbortedTransaction] | None = None) -> None:
        """The segment rolled (or was rewritten): write its file durably, or remove it if it has no entries.

        ``entries`` defaults to the ones held in memory. Raises ``KafkaStorageError`` if
        the file cannot be written: a roll must not go on without it.
        """
        entries = self.active_entries if entries is None else entries
        try:
            if entries:
                self._write(anchor_of(last_batch), entries)
            else:
                self.path.unlink(missing_ok=True)
        except OSError as error:
            raise KafkaStorageError(f"writing {self.path} failed: {error}") from error
        self._count = len(entries)
        self._active = None

    def _write(self, anchor: Anchor, entries: list[AbortedTransaction]) -> None:
        """Replace the file with these entries (a replay that finds them there already writes nothing)."""
        body = b"".join(
            ENTRY.pack(txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset) for txn in entries
        )
        data = HEADER.pack(MAGIC, VERSION, *anchor, zlib.crc32(body)) + body
        try:
            if self.path.read_bytes() == data:
                return
        except FileNotFoundError:
            pass
        write_atomically(self.path, data)

    def verify(self, last_batch: ScannedBatch | None) -> bool:
        """Take the file on disk as this rolled segment's index if it reads whole and is anchored in ``last_batch``.

        No file means no aborted transactions. False (and nothing taken) otherwise.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            self._active, self._count = None, 0
            return True
        except OSError:
            return False
        if len(data) < HEADER.size or (len(data) - HEADER.size) % ENTRY.size:
            return False
        magic, version, *anchor, checksum = HEADER.unpack_from(data)
        body = data[HEADER.size :]
        if (magic, version) != (MAGIC, VERSION) or tuple(anchor) != anchor_of(last_batch):
            return False
        if zlib.crc32(body) != checksum:
            return False
        self._active, self._count = None, len(body) // ENTRY.size
        return True

    def entries(self) -> list[AbortedTransaction]:
        """Every entry, from memory or from the file (the cleaner carries them to a rewritten segment)."""
        active = self._active
        if active is not None:
            return list(active)
        if not self._count:
            return []
        with self._file_entries() as entries:
            return [entries[index] for index in range(len(entries))]

    def collect(self, start: int, end: int, found: list[AbortedTransaction]) -> bool:
        """``collect_aborted`` over this segment's entries, from memory or from the file.

        Raises ``FileNotFoundError`` when the file of a rolled segment with entries is
        gone: the segment was deleted under the read (retention).
        """
        active = self._active
        if active is not None:
            return collect_aborted(active, start, end, found)
        if not self._count:
            return False
        with self._file_entries() as entries:
            return collect_aborted(entries, start, end, found)

    @contextmanager
    def _file_entries(self) -> Iterator[_EntryFile]:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            yield _EntryFile(fd, (os.fstat(fd).st_size - HEADER.size) // ENTRY.size)
        finally:
            os.close(fd)

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
