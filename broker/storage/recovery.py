"""Load a partition directory's segments, re-validating what may not have reached the disk.

Kafka's ``LogLoader``: segments wholly below the recovery point were fsynced, so they
are trusted — only their indexes are checked (and rebuilt by a header scan when
missing or inconsistent). From the segment holding the recovery point on, every batch
is re-validated: header, CRC-32C, and offsets contiguous from the segment's base
offset. At the first torn or corrupt batch the log is cut: that segment is truncated
there and every later segment is deleted, so the log is exactly the whole batches
before the damage. Stray files of interrupted operations (``.cleaned``, ``.swap``,
``.tmp``, ``.deleted``) are removed first.

What makes trusting sound: ``PartitionLog`` lets the recovery point pass a segment
only once that segment is durable whole, its ``.log`` and both indexes fsynced (the
invariant stated in ``segment.py``). The indexes of the active segment are not fsynced
by an acknowledgement flush and its index entries may not even be written yet; that
is safe because the segment holding the recovery point, and every later one, is
rebuilt here from its ``.log`` whatever its index files hold.
"""

from __future__ import annotations

import re
from pathlib import Path

import structlog

from broker.record.header import BatchHeader
from broker.storage.epoch_cache import LeaderEpochCache
from broker.storage.file_scan import TornBatch
from broker.storage.log_config import LogConfig
from broker.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
)
from broker.storage.transaction_index import TXN_INDEX_SUFFIX

logger = structlog.get_logger(__name__)

STRAY_SUFFIXES = (".cleaned", ".swap", ".tmp", ".deleted")
_SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)$")


def delete_stray_files(directory: Path) -> list[Path]:
    """Remove leftovers of interrupted writes, and indexes whose ``.log`` is gone."""
    removed = []
    for path in directory.iterdir():
        match = _SEGMENT_FILE.match(path.name)
        orphan_index = (
            match is not None
            and match.group(2) in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
            and not (directory / (match.group(1) + LOG_SUFFIX)).exists()
        )
        if path.is_file() and (path.name.endswith(STRAY_SUFFIXES) or orphan_index):
            path.unlink()
            removed.append(path)
    return removed


def segment_base_offsets(directory: Path) -> list[int]:
    return sorted(
        int(match.group(1))
        for path in directory.iterdir()
        if (match := _SEGMENT_FILE.match(path.name)) and match.group(2) == LOG_SUFFIX
    )


def _load_trusted(segment: LogSegment) -> TornBatch | None:
    """A segment below the recovery point: check the indexes, rebuild them if wrong.

    Should its tail turn out torn after all, fall back to full validation.
    """
    if not segment.indexes_consistent():
        return segment.rebuild(check_crc=False, on_batch=lambda header: None)
    try:
        segment.load_tail()
    except TornBatch:
        return segment.rebuild(check_crc=True, on_batch=lambda header: None)
    if not segment.time_index.is_consistent(segment.next_offset):
        return segment.rebuild(check_crc=False, on_batch=lambda header: None)
    return None


def _delete_segments(segments: list[LogSegment]) -> None:
    for segment in segments:
        segment.close()
        segment.delete()


def load_segments(
    directory: Path,
    config: LogConfig,
    recovery_point: int,
    epoch_cache: LeaderEpochCache,
    *,
    topic: str,
    partition: int,
) -> list[LogSegment]:
    """Open every segment in order, recovering from the one holding ``recovery_point``.

    Epochs of re-validated batches newer than the cache's latest are assigned to
    ``epoch_cache`` (as Kafka's ``LogSegment.recover`` does), so a lost checkpoint
    write is repaired from the batches themselves.
    """
    for path in delete_stray_files(directory):
        logger.info("log.stray_file_deleted", topic=topic, partition=partition, path=str(path))
    bases = segment_base_offsets(directory)
    first_recovered = max([i for i, base in enumerate(bases) if base <= recovery_point] or [0])

    def assign_epoch(header: BatchHeader) -> None:
        epoch_cache.assign(header.partition_leader_epoch, header.base_offset)

    kept: list[LogSegment] = []
    for i, base in enumerate(bases):
        if kept and base != kept[-1].next_offset:
            logger.error(
                "log.segment_gap",
                topic=topic,
                partition=partition,
                expected_base_offset=kept[-1].next_offset,
                found_base_offset=base,
            )
            _delete_segments([LogSegment(directory, later, config.index_interval_bytes) for later in bases[i:]])
            break
        segment = LogSegment(directory, base, config.index_interval_bytes)
        if i >= first_recovered:
            torn = segment.rebuild(check_crc=True, on_batch=assign_epoch)
        else:
            torn = _load_trusted(segment)
        kept.append(segment)
        if torn is not None:
            logger.warning(
                "log.recovery_truncated",
                topic=topic,
                partition=partition,
                segment_base_offset=base,
                position=torn.position,
                log_end_offset=segment.next_offset,
                reason=torn.reason,
            )
            segment.truncate_bytes(torn.position)
            _delete_segments([LogSegment(directory, later, config.index_interval_bytes) for later in bases[i + 1 :]])
            break
    return kept
