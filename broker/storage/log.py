"""The partition log: an ordered list of segments with Kafka's offsets and epochs.

Used alike by the leader (``append_as_leader`` assigns offsets and stamps its epoch)
and by followers (``append_as_follower`` keeps the leader's offsets and epochs), so
no single-replica assumption lives here.

Invariants:
- ``log_start_offset <= log_end_offset``; offsets are contiguous from the first
  segment's base offset to ``log_end_offset`` (recovery cuts the log where they are not);
- ``recovery_point <= log_end_offset``: everything below it has been fsynced, and every
  segment wholly below the segment holding it is durable whole, ``.log`` *and* indexes
  (recovery trusts those segments and only checks their indexes; see ``segment.py``).
  So an acknowledgement flush fsyncs the active ``.log`` alone, and a rolled segment's
  indexes are fsynced before the recovery point moves past it;
- leader epochs never decrease along the log, and the epoch cache (persisted to
  ``leader-epoch-checkpoint`` on every change) has no entry at or past ``log_end_offset``;
- ``transactions`` describes exactly the batches below ``log_end_offset``: every append
  feeds it; an open or a truncation takes it from the snapshot (written at every roll and
  at a clean close) when the snapshot is anchored in the log, and replays what lies past it
  (or the whole log) (``broker.storage.transaction_snapshot``). Each segment's
  ``txn_index`` holds the aborted transactions whose marker it holds: the active one's in
  memory, a rolled one's in its ``.txnindex`` (``broker.storage.transaction_index``).
  Retention never deletes a segment at or above its last stable offset.

Concurrency: the core is synchronous. Every change (appends, truncation, retention,
roll) holds ``self._lock``; readers hold no lock. A reader takes ``log_end_offset``
first, then the segment tuple (replaced, never mutated), then ``log_start_offset``
and each segment's size. The appender publishes sizes before the LEO, and retention
replaces the segments before it raises the log start offset — so a read never sees
a torn batch nor silently skips deleted offsets. A truncation racing a read may still
hand that read bytes that are being cut, as in Kafka; so callers truncate only while
no read of the log is in flight (a follower truncates before it fetches).
"""

from __future__ import annotations

import bisect
import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import structlog

from broker.clock import wall_clock_ms
from broker.errors import (
    CorruptRecord,
    FencedLeaderEpoch,
    OffsetOutOfRange,
    RecordTooLarge,
    UnexpectedAppendOffset,
)
from broker.record.control import decode_marker
from broker.record.header import BatchHeader, iter_batches, stamp
from broker.storage.checkpoint import LeaderEpochCheckpointFile, fsync_directory
from broker.storage.epoch_cache import LeaderEpochCache
from broker.storage.log_config import LogConfig
from broker.storage.log_retention import segments_to_retire
from broker.storage.recovery import load_segments
from broker.storage.segment import LogSegment
from broker.storage.timestamp_lookup import exact_offset_for_timestamp
from broker.storage.transaction_snapshot import read_snapshot, write_snapshot
from broker.storage.transactions import AbortedTransaction, PartitionTransactions

logger = structlog.get_logger(__name__)

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
MAX_RELATIVE_OFFSET = 2**31 - 1
"""A segment rolls before a relative offset would overflow its int32 index entry."""


def _holding(segments: Sequence[LogSegment], offset: int) -> int:
    """Index of the segment holding ``offset`` (the last one starting at or below it; the first if none does)."""
    return max(bisect.bisect_right(segments, offset, key=lambda s: s.base_offset) - 1, 0)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time_ms: int
    """The broker's clock at the append; batches keep their CreateTime (the CRC covers it)."""
    size_bytes: int
    batch_count: int


@dataclass(frozen=True, slots=True)
class CheckedBatches:
    """Record batches whose headers and CRC-32Cs this broker has already checked, with their headers.

    Invariant: built only by ``check_batches`` or by a caller that has just run a check
    at least as strict (the produce edge's ``validate_produced_batches``, which checks
    every header and CRC and walks every record). Carrying the headers inward lets
    each later layer skip a second CRC pass over the same bytes: a produced batch's
    CRC is computed once per request instead of three times.
    """

    data: bytes | bytearray
    headers: tuple[BatchHeader, ...]

    @classmethod
    def after_validation(cls, data: bytes, headers: tuple[BatchHeader, ...]) -> CheckedBatches:
        """Batches a stricter check (``validate_produced_batches``) just accepted, with the headers it returned."""
        return cls(data, headers)


def check_batches(data: bytes | bytearray) -> CheckedBatches:
    """Check every batch (header and CRC) before anything is written; ``CorruptRecord`` at the first bad one."""
    if not data:
        raise CorruptRecord("an append needs at least one record batch, got 0 bytes")
    return CheckedBatches(data, tuple(iter_batches(data, check_crc=True)))


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole batches; ``first_batch_offset`` is the first one's base offset (``start_offset`` if empty)."""

    data: bytes
    first_batch_offset: int
    next_offset: int
    high_bound: int


class PartitionLog:
    """Segments of one partition replica; open with ``PartitionLog.open``."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        *,
        topic: str,
        partition: int,
        segments: list[LogSegment],
        epoch_cache: LeaderEpochCache,
        log_start_offset: int,
    ) -> None:
        self.directory = directory
        self.topic = topic
        self.partition = partition
        self._config = config
        self._lock = threading.RLock()
        self._flush_lock = threading.Lock()
        self._segments = tuple(segments)
        self._log_end_offset = segments[-1].next_offset
        self._log_start_offset = log_start_offset
        self._recovery_point = segments[0].base_offset
        self._epoch_cache = epoch_cache
        self._epoch_checkpoint = LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT_FILE)
        self._directory_dirty = True
        self._parent_dirty = False
        """The log's directory was created and its entry in the data directory is not durable yet."""
        self._epochs_unwritten = False
        """The epoch cache holds entries the checkpoint does not: the next flush writes it (``assign_epoch``)."""
        self._fsync_count = 0
        self._closed = False
        self._log = logger.bind(topic=topic, partition=partition)
        self._transactions = PartitionTransactions()
        """Replaced whole on truncation and at open; readers take the reference once."""

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        *,
        topic: str,
        partition: int,
        recovery_point: int = 0,
        log_start_offset: int = 0,
    ) -> PartitionLog:
        """Open (or create) the log in ``directory``, re-validating everything from ``recovery_point``.

        ``log_start_offset`` is the checkpointed low watermark; the result is clamped
        into ``[first segment base offset, log_end_offset]``. The recovered tail is
        fsynced, so afterwards ``recovery_point == log_end_offset``.

        A log created here (no directory yet) is empty: nothing is recovered or flushed, and
        its directory entries become durable with its first flush, which every acknowledged
        append waits for. Creating a partition then costs no fsync, where it cost three
        (directory fsyncs were 41 % of a broker's profile while it created 1 000 replicas); a
        crash before the first flush can only lose an empty log, which is created again. It
        is a directory and one file: its segment's indexes wait for the first seal and its
        epoch checkpoint for the first flush (``_persist_epochs``), and its creation is logged
        at debug level only (the replica's role change that follows is the event to read).
        """
        directory = Path(directory)
        if not directory.exists():
            return cls._create(directory, config, topic=topic, partition=partition, log_start_offset=log_start_offset)
        checkpoint = LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT_FILE)
        epoch_cache = LeaderEpochCache(checkpoint.read())
        entries_before = epoch_cache.entries
        segments = load_segments(directory, config, recovery_point, epoch_cache, topic=topic, partition=partition)
        if not segments:
            segments = [LogSegment(directory, log_start_offset, config.index_interval_bytes)]
        log_end_offset = segments[-1].next_offset
        start = min(max(log_start_offset, segments[0].base_offset), log_end_offset)
        epoch_cache.truncate_from_end(log_end_offset)
        epoch_cache.truncate_from_start(start)
        if epoch_cache.entries != entries_before:
            checkpoint.write(epoch_cache.entries)
        log = cls(
            directory,
            config,
            topic=topic,
            partition=partition,
            segments=segments,
            epoch_cache=epoch_cache,
            log_start_offset=start,
        )
        log._flush(seal_active=True)
        log._transactions, replayed_from = log._transactions_from_disk(verify_rolled=True)
        log._log.info(
            "log.opened",
            log_start_offset=start,
            log_end_offset=log_end_offset,
            segments=len(segments),
            latest_epoch=epoch_cache.latest_epoch,
            transactions_replayed_from=replayed_from,
            open_transactions=len(log._transactions.open_transactions),
        )
        return log

    @classmethod
    def _create(
        cls, directory: Path, config: LogConfig, *, topic: str, partition: int, log_start_offset: int
    ) -> PartitionLog:
        directory.mkdir(parents=True)
        log = cls(
            directory,
            config,
            topic=topic,
            partition=partition,
            segments=[LogSegment(directory, log_start_offset, config.index_interval_bytes, new=True)],
            epoch_cache=LeaderEpochCache([]),
            log_start_offset=log_start_offset,
        )
        log._parent_dirty = True
        log._log.debug("log.created", log_start_offset=log_start_offset)
        return log

    # -- state -------------------------------------------------------------------------

    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Apply changed topic settings; they take effect from the next append or retention pass."""
        self._config = config

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def epoch_cache(self) -> LeaderEpochCache:
        return self._epoch_cache

    @property
    def size_bytes(self) -> int:
        return sum(segment.size_bytes for segment in self._segments)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return self._segments

    @property
    def transactions(self) -> PartitionTransactions:
        """The open and unreplicated transactions of the batches below the log end offset (the aborted ones:
        ``aborted_between``)."""
        return self._transactions

    def _transactions_from_disk(self, *, verify_rolled: bool) -> tuple[PartitionTransactions, int]:
        """The transactions of the log as it is now, every segment's index set up (under the lock, or before
        sharing); and the offset the replay started at.

        From a snapshot anchored in this log at ``end_offset``: the rolled segments wholly
        below the one holding it keep their ``.txnindex`` (read and checked at open,
        ``verify_rolled``; already set up at a truncation), and the rest is replayed from
        ``end_offset``. Without one, or when a rolled segment's index does not verify, the
        whole log is replayed. Either way the replayed segments' indexes are written again.
        """
        segments = self._segments
        snapshot = read_snapshot(self.directory)
        if (
            snapshot is not None
            and segments[0].base_offset <= snapshot.end_offset <= self._log_end_offset
            and snapshot.anchored_at(self._batch_ending_at(snapshot.end_offset))
        ):
            first = _holding(segments, snapshot.end_offset)
            if not verify_rolled or all(s.txn_index.verify(s.last_batch()) for s in segments[:first]):
                base = segments[first].base_offset
                aborted = [txn for txn in snapshot.aborted if txn.last_offset >= base]
                return self._replayed(snapshot.transactions, snapshot.end_offset, first, aborted), snapshot.end_offset
            self._log.warning("log.transaction_index_unverified", snapshot_end_offset=snapshot.end_offset)
        return self._replayed(PartitionTransactions(), 0, 0, []), 0

    def _replayed(
        self, transactions: PartitionTransactions, start: int, first: int, aborted: list[AbortedTransaction]
    ) -> PartitionTransactions:
        """Feed ``transactions`` the batches from ``start`` on (in ``segments[first:]``), writing each index met.

        ``aborted`` holds those of ``segments[first]`` below ``start``.
        """
        segments = self._segments
        for index in range(first, len(segments)):
            segment = segments[index]
            for scanned in segment.scanned_batches(segment.size_bytes):
                header = scanned.header
                if header.base_offset < start or not header.is_transactional:
                    continue
                marker = None
                if header.is_control:
                    data = segment.pread(header.size, scanned.position)
                    try:
                        marker = decode_marker(data, dataclasses.replace(header, position=0))
                    except CorruptRecord as error:
                        self._log.error("log.marker_unreadable", offset=header.base_offset, error=error.message)
                closed = transactions.apply(header, marker)
                if closed is not None:
                    aborted.append(closed)
            if index == len(segments) - 1:
                segment.txn_index.activate(aborted)
            else:
                segment.txn_index.persist(segment.last_batch(), aborted)
                aborted = []
        return transactions

    def _batch_ending_at(self, offset: int) -> BatchHeader | None:
        """The batch whose next offset is ``offset``; None at the start of the log or when no batch ends there."""
        for segment in reversed(self._segments):
            if segment.base_offset < offset <= segment.next_offset and segment.size_bytes:
                found = segment.find_batch(offset - 1, segment.size_bytes)
                return found.header if found is not None and found.header.next_offset == offset else None
        return None

    def _write_transactions_snapshot(self) -> None:
        """The transactions at the log end, for the next open or truncation to start from (under the lock)."""
        try:
            write_snapshot(
                self.directory,
                self._log_end_offset,
                self._batch_ending_at(self._log_end_offset),
                self._transactions,
                self._segments[-1].txn_index.active_entries,
            )
        except OSError as error:
            self._log.warning("log.transactions_snapshot_failed", error=str(error))

    def _track_transactions(self, segment: LogSegment, data: bytes | bytearray, headers: Sequence[BatchHeader]) -> None:
        """Feed the batches appended to ``segment`` to ``transactions`` and its index (under the lock).

        Only a control batch is decoded.
        """
        transactions = self._transactions
        for header in headers:
            if header.is_transactional:
                closed = transactions.apply(header, decode_marker(data, header) if header.is_control else None)
                if closed is not None:
                    segment.txn_index.append(closed)

    def batch_headers(self) -> list[BatchHeader]:
        """Every batch header of the log in offset order (rebuilding producer state)."""
        segments = self._segments
        return [header for segment in segments for header in segment.batch_headers(segment.size_bytes)]

    @property
    def fsync_count(self) -> int:
        """How many ``flush`` calls reached the disk; lets tests see group commit coalescing.

        Fsyncs outside a flush (a roll right at the recovery point) show in the segments' own counters.
        """
        return self._fsync_count

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """Kafka's OffsetsForLeaderEpoch answer: (largest epoch <= requested, its end offset)."""
        with self._lock:
            return self._epoch_cache.end_offset_for(leader_epoch, self._log_end_offset)

    def assign_epoch(self, leader_epoch: int, start_offset: int) -> None:
        """Record that ``leader_epoch`` starts at ``start_offset`` (a new leader: its LEO).

        The checkpoint waits for the next flush (Kafka's KAFKA-15046): a new leader of a
        log that holds data wrote it at once, two fsyncs on the event loop per partition,
        a quarter of a new controller's profile while it took over 3 300 leaderships.
        Safe because an assignment only adds an entry at the log end: the flush writes the
        checkpoint before the recovery point passes any batch of the new epoch, recovery
        rebuilds the epochs of every batch above the recovery point from their headers,
        and an epoch that a crash takes before it had a batch was never in a follower's
        log. Truncations, which remove entries, still write at once (``_persist_epochs``).
        """
        with self._lock:
            if self._epoch_cache.assign(leader_epoch, start_offset):
                self._epochs_unwritten = True
                self._log.info("log.epoch_assigned", leader_epoch=leader_epoch, start_offset=start_offset)

    def _persist_epochs(self) -> None:
        """Write the epoch checkpoint (under ``_lock``), or leave it to the first flush of a new log.

        Until its first flush a new log's directory entry is not durable, so a checkpoint
        fsynced inside it protects nothing a crash would not take anyway; and the first
        flush writes it before the recovery point moves, so whatever recovery trusts has
        its epochs on disk, and whatever it re-validates gives its epochs back from the
        batch headers. Writing it here cost 2 fsyncs per led partition at creation, 29 %
        of the controller's profile while it created 10 000 partitions.
        """
        if self._parent_dirty:
            self._epochs_unwritten = True
            return
        self._epoch_checkpoint.write(self._epoch_cache.entries)
        self._epochs_unwritten = False

    # -- appending ---------------------------------------------------------------------

    def _check_sizes(self, headers: tuple[BatchHeader, ...]) -> None:
        for header in headers:
            if header.size > self._config.max_message_bytes:
                raise RecordTooLarge(
                    f"record batch of {header.size} bytes exceeds max_message_bytes "
                    f"{self._config.max_message_bytes} of {self.topic}-{self.partition}",
                    max_message_bytes=self._config.max_message_bytes,
                )

    def append_as_leader(self, data: bytes | bytearray | CheckedBatches, leader_epoch: int, now_ms: int) -> AppendInfo:
        """Assign offsets from the LEO, stamp ``leader_epoch`` into every batch, write.

        ``data`` is checked here (headers and CRC) unless it comes as ``CheckedBatches``.
        Raises ``CorruptRecord`` / ``RecordTooLarge`` with nothing written, and
        ``FencedLeaderEpoch`` if ``leader_epoch`` is older than the log's latest epoch.
        """
        checked = data if isinstance(data, CheckedBatches) else check_batches(data)
        headers = checked.headers
        self._check_sizes(headers)
        buf = bytearray(checked.data)
        with self._lock:
            self._check_open()
            latest_epoch = self._epoch_cache.latest_epoch
            if leader_epoch < latest_epoch:
                raise FencedLeaderEpoch(
                    f"leader epoch {leader_epoch} is older than {latest_epoch}, the latest in "
                    f"{self.topic}-{self.partition}",
                    leader_epoch=leader_epoch,
                    latest_epoch=latest_epoch,
                )
            if leader_epoch > latest_epoch:
                self.assign_epoch(leader_epoch, self._log_end_offset)
            next_offset = self._log_end_offset
            stamped = []
            for header in headers:
                stamp(buf, header.position, next_offset, leader_epoch)
                stamped.append(
                    dataclasses.replace(header, base_offset=next_offset, partition_leader_epoch=leader_epoch)
                )
                next_offset += header.last_offset_delta + 1
            return self._append_locked(buf, stamped, now_ms)

    def append_as_follower(self, data: bytes | bytearray | CheckedBatches, now_ms: int | None = None) -> AppendInfo:
        """Append the leader's batches unchanged; the first must start at the LEO.

        ``data`` is checked here (headers and CRC) unless it comes as ``CheckedBatches``.
        Kafka's rule for a follower that restarted at the leader's log start offset in
        the middle of a batch: when this log is empty and that batch straddles the LEO,
        start afresh at the batch's base offset. Size limits are the leader's business.
        """
        checked = data if isinstance(data, CheckedBatches) else check_batches(data)
        data, headers = checked.data, checked.headers
        for previous, header in pairwise(headers):
            if header.base_offset != previous.next_offset:
                raise CorruptRecord(
                    f"batches not contiguous: offset {header.base_offset} follows {previous.last_offset}"
                )
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        with self._lock:
            self._check_open()
            first = headers[0]
            if first.base_offset != self._log_end_offset:
                if self.size_bytes == 0 and first.base_offset < self._log_end_offset <= first.last_offset:
                    self.truncate_fully_and_start_at(first.base_offset)
                else:
                    raise UnexpectedAppendOffset(
                        f"follower append to {self.topic}-{self.partition} starts at offset {first.base_offset}, "
                        f"expected the log end offset {self._log_end_offset}",
                        first_offset=first.base_offset,
                        log_end_offset=self._log_end_offset,
                    )
            info = self._append_locked(data, headers, now_ms)
            epochs_changed = False
            for header in headers:
                if self._epoch_cache.assign(header.partition_leader_epoch, header.base_offset):
                    epochs_changed = True
                    self._log.info(
                        "log.epoch_assigned",
                        leader_epoch=header.partition_leader_epoch,
                        start_offset=header.base_offset,
                    )
            if epochs_changed:
                self._epochs_unwritten = True
            return info

    def _append_locked(self, data: bytes | bytearray, headers: Sequence[BatchHeader], now_ms: int) -> AppendInfo:
        segment = self._maybe_roll(len(data), headers[-1].last_offset, now_ms)
        segment.append(data, headers)
        self._track_transactions(segment, data, headers)
        self._log_end_offset = headers[-1].next_offset
        return AppendInfo(
            base_offset=headers[0].base_offset,
            last_offset=headers[-1].last_offset,
            max_timestamp=max(header.max_timestamp for header in headers),
            log_append_time_ms=now_ms,
            size_bytes=len(data),
            batch_count=len(headers),
        )

    def _maybe_roll(self, size_bytes: int, last_offset: int, now_ms: int) -> LogSegment:
        """Start a new segment at the LEO when the active one is full, old, or out of offsets."""
        active = self._segments[-1]
        if active.size_bytes == 0:
            return active
        if active.size_bytes + size_bytes > self._config.segment_bytes:
            reason = "segment_bytes"
        elif active.roll_base_ms is not None and now_ms - active.roll_base_ms > self._config.segment_ms:
            reason = "segment_ms"
        elif last_offset - active.base_offset > MAX_RELATIVE_OFFSET:
            reason = "relative_offset_overflow"
        else:
            return active
        active.seal()
        active.txn_index.persist(active.last_batch())
        if self._recovery_point >= active.next_offset:
            # The new segment starts at the recovery point: from now on recovery trusts
            # ``active``, so it must be durable whole before the new segment exists.
            active.sync_log()
            active.sync_indexes()
        segment = LogSegment(self.directory, self._log_end_offset, self._config.index_interval_bytes)
        self._segments = (*self._segments, segment)
        self._directory_dirty = True
        self._write_transactions_snapshot()
        self._log.info("log.segment_rolled", base_offset=segment.base_offset, reason=reason)
        return segment

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"log {self.topic}-{self.partition} is closed")

    # -- reading -----------------------------------------------------------------------

    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None) -> ReadResult:
        """Whole batches from the one holding ``start_offset``, all ending below the bound.

        The bound is ``max_offset`` (the high watermark, exclusive) or the LEO. At least
        one whole batch is returned when one fits under the bound, even past ``max_bytes``.
        """
        log_end_offset = self._log_end_offset
        segments = self._segments
        log_start_offset = self._log_start_offset  # after the segments: retention moves it last
        if not log_start_offset <= start_offset <= log_end_offset:
            raise OffsetOutOfRange(
                f"offset {start_offset} is outside [{log_start_offset}, {log_end_offset}] "
                f"of {self.topic}-{self.partition}",
                log_start_offset=log_start_offset,
                log_end_offset=log_end_offset,
            )
        bound = log_end_offset if max_offset is None else min(max_offset, log_end_offset)
        if start_offset >= bound:
            return ReadResult(b"", start_offset, start_offset, bound)
        for segment in segments[_holding(segments, start_offset) :]:
            found = segment.read(start_offset, max_bytes, bound, segment.size_bytes)
            if found is not None:
                return ReadResult(found.data, found.first_batch_offset, found.next_offset, bound)
        return ReadResult(b"", start_offset, start_offset, bound)

    def aborted_between(self, start: int, end: int) -> list[AbortedTransaction]:
        """The aborted transactions with records in ``[start, end)``, in marker order: what a ``read_committed``
        read of that range must drop (Kafka's ``collectAbortedTransactions``).

        The segments' indexes from the one holding ``start`` on, until one says the search
        is complete. No lock, as ``read``: a roll writes a segment's file before its index
        stops answering from memory. Raises ``OffsetOutOfRange`` when retention deleted a
        segment of the range during the search, as the read would have a moment later.
        """
        segments = self._segments
        found: list[AbortedTransaction] = []
        try:
            for segment in segments[_holding(segments, start) :]:
                if segment.txn_index.collect(start, end, found):
                    break
        except FileNotFoundError as error:
            raise OffsetOutOfRange(
                f"offset {start} of {self.topic}-{self.partition} was deleted by retention during the read",
                log_start_offset=self._log_start_offset,
                log_end_offset=self._log_end_offset,
            ) from error
        return found

    def offset_for_timestamp(self, timestamp_ms: int) -> int | None:
        """The first offset whose record timestamp is >= ``timestamp_ms`` (None if no such record).

        Located through the time indexes at batch granularity, then made exact by
        decoding that one batch's record timestamps.
        """
        log_start_offset = self._log_start_offset
        for segment in self._segments:
            if segment.next_offset <= log_start_offset:
                continue
            found = segment.find_batch_by_timestamp(timestamp_ms, segment.size_bytes)
            if found is not None:
                data = segment.pread(found.header.size, found.position)
                return exact_offset_for_timestamp(data, found.header, timestamp_ms, log_start_offset)
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(largest record timestamp, the first offset holding it): Kafka's ListOffsets MAX_TIMESTAMP (KIP-734).

        The segment with the largest timestamp (the earliest of equals), then its batch
        that first reached it, decoded to the record. None for an empty log. Records at
        or above the high watermark count here: the caller hides an answer there.
        """
        log_start_offset = self._log_start_offset
        best: LogSegment | None = None
        for segment in self._segments:
            if (
                segment.next_offset > log_start_offset
                and segment.size_bytes
                and (best is None or segment.max_timestamp_ms > best.max_timestamp_ms)
            ):
                best = segment
        if best is None:
            return None
        timestamp_ms = best.max_timestamp_ms
        found = best.find_batch_by_timestamp(timestamp_ms, best.size_bytes)
        if found is None:
            return None
        data = best.pread(found.header.size, found.position)
        return timestamp_ms, exact_offset_for_timestamp(data, found.header, timestamp_ms, log_start_offset)

    # -- truncation and retention ------------------------------------------------------

    def truncate_to(self, offset: int) -> None:
        """Drop every batch at or after ``offset`` (whole batches: one holding it goes too).

        At or past the log end nothing is cut, but epochs starting at the log end are
        still forgotten (Kafka's ``UnifiedLog.truncateTo``): a broker that became leader
        and was deposed before appending holds an epoch entry the new leader never had,
        and until it is gone every fetch is answered with a diverging epoch again.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        with self._lock:
            self._check_open()
            if offset >= self._log_end_offset:
                if self._epoch_cache.truncate_from_end(self._log_end_offset):
                    self._persist_epochs()
                return
            if offset <= self._segments[0].base_offset:
                # Nothing below ``offset`` is kept, so no segment survives to be cut.
                self.truncate_fully_and_start_at(offset)
                return
            keep = [segment for segment in self._segments if segment.base_offset < offset]
            for segment in self._segments[len(keep) :]:
                segment.delete()
                self._directory_dirty = True
            new_end = keep[-1].truncate_to(offset)
            previous_end = self._log_end_offset
            self._segments = tuple(keep)
            self._log_end_offset = new_end
            self._recovery_point = min(self._recovery_point, new_end)
            self._log_start_offset = min(self._log_start_offset, new_end)
            if self._epoch_cache.truncate_from_end(new_end):
                self._persist_epochs()
            self._transactions, _ = self._transactions_from_disk(verify_rolled=False)
            self._log.info(
                "log.truncated", requested_offset=offset, log_end_offset=new_end, previous_log_end_offset=previous_end
            )

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it at ``offset`` (a follower below the leader's log start)."""
        with self._lock:
            self._check_open()
            for segment in self._segments:
                segment.delete()
            segment = LogSegment(self.directory, offset, self._config.index_interval_bytes)
            self._segments = (segment,)
            self._log_end_offset = self._log_start_offset = self._recovery_point = offset
            self._directory_dirty = True
            self._epoch_cache.clear()
            self._persist_epochs()
            self._transactions = PartitionTransactions()
            self._log.info("log.truncated_fully", log_start_offset=offset, log_end_offset=offset)

    def advance_log_start_offset(self, offset: int) -> bool:
        """Move the low watermark up to ``offset`` (<= LEO); return whether it moved.

        Segments wholly below it are deleted by the next ``delete_retained_segments``.
        """
        with self._lock:
            if offset > self._log_end_offset:
                raise OffsetOutOfRange(
                    f"cannot move the log start offset of {self.topic}-{self.partition} to {offset}, "
                    f"past the log end offset {self._log_end_offset}",
                    log_start_offset=self._log_start_offset,
                    log_end_offset=self._log_end_offset,
                )
            if offset <= self._log_start_offset:
                return False
            self._log_start_offset = offset
            if self._epoch_cache.truncate_from_start(offset):
                self._persist_epochs()
            self._log.info("log.start_offset_advanced", log_start_offset=offset)
            return True

    def delete_retained_segments(self, now_ms: int, high_watermark: int) -> int:
        """Delete old segments by ``retention_ms``/``retention_bytes``; return how many.

        Only whole segments entirely below the last stable offset (so below
        ``high_watermark``, and an open transaction's records stay until it is decided), never the active one, oldest first; the
        log start offset moves to the new first segment.
        """
        return self._delete_segments(self._config, now_ms, self._transactions.last_stable_offset(high_watermark))

    def delete_segments_below_log_start(self) -> int:
        """Delete the whole segments below the log start offset; return how many.

        A follower's log start follows its leader's (the fetch responses move it) and
        its own retention rules never run, so its replica keeps what the leader keeps;
        without this the files below it would stay on a follower's disk for ever.
        """
        unlimited = dataclasses.replace(self._config, retention_ms=-1, retention_bytes=-1)
        return self._delete_segments(unlimited, 0, self._log_start_offset)

    def _delete_segments(self, config: LogConfig, now_ms: int, high_watermark: int) -> int:
        with self._lock:
            self._check_open()
            retired = segments_to_retire(
                self._segments,
                config,
                now_ms=now_ms,
                high_watermark=high_watermark,
                log_start_offset=self._log_start_offset,
            )
            if not retired:
                return 0
            for segment, reason in retired:
                segment.delete()
                self._log.info(
                    "log.segment_deleted",
                    base_offset=segment.base_offset,
                    next_offset=segment.next_offset,
                    reason=reason,
                )
            self._segments = self._segments[len(retired) :]
            self._directory_dirty = True
            self.advance_log_start_offset(self._segments[0].base_offset)
            return len(retired)

    # -- durability and lifecycle ------------------------------------------------------

    def flush(self) -> None:
        """Make everything appended before this call durable and move ``recovery_point`` over it.

        The acknowledgement flush of group commit: it fsyncs the active segment's ``.log``
        (and the directory after a roll or delete), and the indexes only of segments the
        recovery point is about to pass (see ``_advance_recovery_point``); the active
        segment's indexes are rebuilt by recovery, so they need no fsync here.

        Safe beside the appender: the target is taken under the lock, the fsyncs run
        outside it. Flushes are serialised among themselves, so one never skips bytes
        another is still syncing.
        """
        self._flush(seal_active=False)

    def _flush(self, *, seal_active: bool) -> None:
        """``flush``; with ``seal_active`` the active segment's indexes are written and fsynced too (open, close)."""
        with self._flush_lock:
            with self._lock:
                target = self._log_end_offset
                active = self._segments[-1]
                if seal_active:
                    active.seal()
                directory_dirty, self._directory_dirty = self._directory_dirty, False
                parent_dirty, self._parent_dirty = self._parent_dirty, False
                if self._epochs_unwritten:
                    self._persist_epochs()
            synced = active.sync_log()
            if seal_active:
                synced = active.sync_indexes() or synced
            if directory_dirty:
                fsync_directory(self.directory)
                synced = True
            if parent_dirty:
                fsync_directory(self.directory.parent)
            self._advance_recovery_point(target, synced=synced)

    def _advance_recovery_point(self, target: int, *, synced: bool) -> None:
        """Move ``recovery_point`` up to ``target`` once every segment it would pass is durable whole.

        The check and the move happen together under the lock: a roll can land while
        the active ``.log`` is being fsynced (a full segment rolls on the very next
        append), and then the new recovery point may equal the new segment's base
        offset, so recovery would trust the just-sealed segment. Any segment so passed
        that still has unsynced bytes (``.log`` or indexes) is sealed under the lock,
        fsynced outside it, and the check repeats. ``synced`` says whether the
        caller's fsyncs already reached the disk, so ``fsync_count`` counts this flush.
        """
        while True:
            with self._lock:
                recovery_point = max(self._recovery_point, min(target, self._log_end_offset))
                passed = self._passed_unsynced_segments(recovery_point)
                if not passed:
                    self._recovery_point = recovery_point
                    if synced:
                        self._fsync_count += 1
                    return
                for segment in passed:
                    segment.seal()
            for segment in passed:
                segment.sync_log()
                segment.sync_indexes()
            synced = True

    def _passed_unsynced_segments(self, recovery_point: int) -> list[LogSegment]:
        """Segments recovery from ``recovery_point`` would trust that are not yet durable whole.

        Recovery trusts every segment before the one holding the recovery point. Those
        before the one holding the current recovery point are durable already (the
        invariant; ``_maybe_roll`` keeps it when a roll lands right at the recovery
        point), so only the segments from there on are looked at: usually none.
        """
        segments = self._segments
        passed = segments[_holding(segments, self._recovery_point) : _holding(segments, recovery_point)]
        return [segment for segment in passed if segment.needs_flush]

    def close(self) -> None:
        """Flush whole, the active segment's indexes included (every policy fsyncs on close), and release the files.

        A clean shutdown lets the next start trust every segment, the active one too.
        """
        if self._closed:
            return
        self._flush(seal_active=True)
        with self._lock:
            if self._closed:
                return
            self._write_transactions_snapshot()
            for segment in self._segments:
                segment.close()
            self._closed = True
            self._log.info("log.closed", log_end_offset=self._log_end_offset)

    def close_and_move(self, doomed_directory: Path) -> None:
        """Close without flushing and move the directory out of the log's name, to be removed.

        The caller removes ``doomed_directory`` afterwards; until then no new log
        can be opened in it, whatever its name.
        """
        with self._lock:
            for segment in self._segments:
                segment.close()
            self._closed = True
            self.directory.rename(doomed_directory)
        self._log.info("log.deleted", doomed_directory=str(doomed_directory))
