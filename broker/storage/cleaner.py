"""The log cleaner: ``cleanup.policy=compact`` keeps the latest record of every key.

Which segments: closed segments (never the active one) lying wholly below the last
stable offset — records a consumer may not yet see, a follower may still have to
match, or an undecided transaction holds, are never touched (the bound of retention).

What is kept (Kafka's rules, simplified to one pass over the cleanable segments):

* a keyed record survives iff no later record in the cleanable segments has the same
  key (the *offset map*: key -> last offset);
* a tombstone (null value) that is the latest for its key survives until its
  timestamp is ``delete_retention_ms`` old, so consumers that were behind still see
  the deletion; then it goes too;
* records without a key are kept (a compacted topic has nothing to replace them by);
* transactions (KIP-98): an aborted transaction's records are removed and never count as
  the latest of their key (they must not hide a committed record); control batches (the
  COMMIT/ABORT markers) are kept whole and are no key's record: they end transactions
  for every replica that replays the log, and their keys are the same for all markers.

Offsets never change. Consecutive source batches with the same leader epoch, CreateTime
timestamps and no producer id are merged into one batch spanning all their offsets;
other batches (idempotent producers, LogAppendTime) are rewritten one to one, so
producer state and per-batch append times rebuild exactly. Batch ranges therefore stay
contiguous, and the leader epoch cache stays valid.

Swap protocol (crash-safe with ``recovery.delete_stray_files``): the cleaned copy is
written and fsynced as ``<base>.log.cleaned``; under the log's lock the segment's index
files are removed, the copy renamed over ``<base>.log``, the directory fsynced, and a
new ``LogSegment`` with rebuilt indexes takes the old one's place in the segment tuple.
A crash before the rename leaves the old segment and a stray file; after it, the new
segment without indexes, which recovery rebuilds. Readers holding the old segment keep
reading its (unlinked) file through their open descriptor. The segment's ``.txnindex``
is rewritten whole with the same entries, anchored in the new last batch (an aborted
transaction whose records are now gone keeps its entry: a reader drops nothing more);
a crash before that leaves an index that no longer verifies, and the next open replays
the log's transactions and writes it again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import structlog

from broker.record.codec import Record
from broker.record.committed import AbortedFilter
from broker.record.decode import iter_batches_with_records
from broker.record.header import NO_PRODUCER_ID, TIMESTAMP_TYPE_MASK, BatchHeader
from broker.storage.checkpoint import fsync_directory
from broker.storage.compacted_batch import BatchSpan, encode_span
from broker.storage.log import PartitionLog
from broker.storage.log_config import CLEANUP_COMPACT
from broker.storage.segment import LogSegment

log = structlog.get_logger(__name__)

CLEANED_SUFFIX = ".cleaned"
MAX_MERGED_BATCH_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CleanerStats:
    segments_cleaned: int
    records_removed: int
    bytes_before: int
    bytes_after: int


def _batches(segment: LogSegment) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Every batch of a closed segment, decoded (the segment is read whole: compacted topics
    keep segments small, 100 MiB for ``__consumer_offsets``)."""
    yield from iter_batches_with_records(segment.pread(segment.size_bytes, 0))


def build_offset_map(segments: list[LogSegment], aborted: list[tuple[int, int]]) -> dict[bytes, int]:
    """Key -> the offset of its latest record among the data batches no aborted transaction holds."""
    rule = AbortedFilter(aborted)
    latest: dict[bytes, int] = {}
    for segment in segments:
        for header, records in _batches(segment):
            if not rule.keeps(header):
                continue
            for record in records:
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def _keep(record: Record, latest: dict[bytes, int], tombstone_horizon_ms: int) -> bool:
    if record.key is None:
        return True
    if latest.get(record.key) != record.offset:
        return False
    return record.value is not None or record.timestamp >= tombstone_horizon_ms


def _mergeable(header: BatchHeader) -> bool:
    return header.producer_id == NO_PRODUCER_ID and not header.attributes & TIMESTAMP_TYPE_MASK


class _SpanWriter:
    """Accumulates kept records of consecutive mergeable batches into one span."""

    def __init__(self) -> None:
        self.out: list[bytes] = []
        self._span: BatchSpan | None = None
        self._records: list[Record] = []
        self._bytes = 0

    def add(self, header: BatchHeader, kept: list[Record]) -> None:
        span = self._span
        if span is not None and (
            not _mergeable(header)
            or header.partition_leader_epoch != span.partition_leader_epoch
            or self._bytes + header.size > MAX_MERGED_BATCH_BYTES
        ):
            self.close_span()
            span = None
        if not _mergeable(header):
            self.out.append(encode_span(_span_of(header), kept))
            return
        if span is None:
            self._span = _span_of(header)
        else:
            self._span = BatchSpan(
                span.base_offset,
                header.last_offset,
                span.partition_leader_epoch,
                span.attributes,
                max(span.max_timestamp, header.max_timestamp),
                NO_PRODUCER_ID,
                span.producer_epoch,
                span.base_sequence,
            )
        self._records.extend(kept)
        self._bytes += header.size

    def close_span(self) -> None:
        if self._span is not None:
            self.out.append(encode_span(self._span, self._records))
        self._span, self._records, self._bytes = None, [], 0


def _span_of(header: BatchHeader) -> BatchSpan:
    return BatchSpan(
        header.base_offset,
        header.last_offset,
        header.partition_leader_epoch,
        header.attributes,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
    )


def clean_segment(
    segment: LogSegment, latest: dict[bytes, int], tombstone_horizon_ms: int, rule: AbortedFilter
) -> tuple[bytes, int] | None:
    """The cleaned bytes of ``segment`` and how many records they drop; None if nothing would go.

    ``rule`` has seen every batch before this segment (segments are cleaned in order).
    """
    writer = _SpanWriter()
    removed = 0
    for header, records in _batches(segment):
        if header.is_control:
            rule.keeps(header)
            kept = records
        elif not rule.keeps(header):
            kept = []
        else:
            kept = [record for record in records if _keep(record, latest, tombstone_horizon_ms)]
        removed += len(records) - len(kept)
        writer.add(header, kept)
    writer.close_span()
    if removed == 0:
        return None
    return b"".join(writer.out), removed


def _swap(partition_log: PartitionLog, old: LogSegment, cleaned: bytes) -> bool:
    """Replace ``old`` by a segment holding ``cleaned``; False if the log moved on meanwhile."""
    cleaned_path = old.log_path.with_name(old.log_path.name + CLEANED_SUFFIX)
    with open(cleaned_path, "wb") as file:
        file.write(cleaned)
        file.flush()
        os.fsync(file.fileno())
    with partition_log._lock:
        if old not in partition_log._segments:
            cleaned_path.unlink()
            return False
        aborted = old.txn_index.entries()
        old.index.close()
        old.time_index.close()
        for index_path in (old.index.path, old.time_index.path):
            index_path.unlink(missing_ok=True)
        os.replace(cleaned_path, old.log_path)
        fsync_directory(partition_log.directory)
        new = LogSegment(partition_log.directory, old.base_offset, old.index_interval_bytes)
        new.rebuild(check_crc=False, on_batch=lambda header: None)
        new.flush()
        new.txn_index.persist(new.last_batch(), aborted)
        partition_log._segments = tuple(new if s is old else s for s in partition_log._segments)
    return True


def compact_log(partition_log: PartitionLog, now_ms: int, high_watermark: int) -> CleanerStats | None:
    """Clean the cleanable segments of a ``cleanup.policy=compact`` log; None if there was nothing to do."""
    config = partition_log.config
    if config.cleanup_policy != CLEANUP_COMPACT:
        return None
    segments = list(partition_log.segments)
    stable = partition_log.transactions.last_stable_offset(high_watermark)
    cleanable = [s for s in segments[:-1] if s.next_offset <= stable and s.size_bytes > 0]
    if not cleanable:
        return None
    found = partition_log.aborted_between(cleanable[0].base_offset, stable)
    aborted = [(txn.producer_id, txn.first_offset) for txn in found]
    latest = build_offset_map(cleanable, aborted)
    horizon_ms = now_ms - config.delete_retention_ms
    rule = AbortedFilter(aborted)
    cleaned_count = removed_total = before = after = 0
    for segment in cleanable:
        result = clean_segment(segment, latest, horizon_ms, rule)
        if result is None:
            continue
        cleaned, removed = result
        size_before = segment.size_bytes
        if _swap(partition_log, segment, cleaned):
            cleaned_count += 1
            removed_total += removed
            before += size_before
            after += len(cleaned)
    if not cleaned_count:
        return None
    stats = CleanerStats(cleaned_count, removed_total, before, after)
    log.info(
        "log.compacted",
        topic=partition_log.topic,
        partition=partition_log.partition,
        segments=cleaned_count,
        records_removed=removed_total,
        bytes_before=before,
        bytes_after=after,
    )
    return stats


def clean_if_compacted(partition_log: PartitionLog, now_ms: int, high_watermark: int) -> bool:
    """The retention loop's hook: compact a compacted log (True), leave others to retention (False).

    A failure is logged and the log left as it was (the swap is all-or-nothing), so one
    bad segment never stops the broker's retention loop.
    """
    if partition_log.config.cleanup_policy != CLEANUP_COMPACT:
        return False
    try:
        compact_log(partition_log, now_ms, high_watermark)
    except Exception as error:  # noqa: BLE001 - a failed pass must not stop the retention loop
        log.error(
            "log.compaction_failed", topic=partition_log.topic, partition=partition_log.partition, error=repr(error)
        )
    return True
