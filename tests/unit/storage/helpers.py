"""Real batches (built by the codec) and real log directories for the storage tests."""

from __future__ import annotations

from pathlib import Path

from broker.record.codec import RecordInput, encode_batch
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig

BASE_TIMESTAMP_MS = 1_700_000_000_000


def make_batch(
    record_count: int = 1, *, value_bytes: int = 20, timestamp_ms: int = BASE_TIMESTAMP_MS, tag: int = 0
) -> bytes:
    """One valid v2 batch of ``record_count`` records, all with ``timestamp_ms``."""
    value = (f"{tag:08d}".encode() * (value_bytes // 8 + 1))[:value_bytes]
    return encode_batch([RecordInput(b"key", value, (), timestamp_ms) for _ in range(record_count)])


def open_log(directory: Path, config: LogConfig | None = None, **kwargs) -> PartitionLog:
    return PartitionLog.open(directory, config or LogConfig(), topic="orders", partition=0, **kwargs)


def whole_log(log: PartitionLog) -> bytes:
    """Every batch of ``log`` back to back (one read stops at a segment's end)."""
    chunks, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        read = log.read(offset, 1 << 30)
        chunks.append(read.data)
        offset = read.next_offset
    return b"".join(chunks)
