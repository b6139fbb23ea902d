"""The record with the largest timestamp (ListOffsets MAX_TIMESTAMP, KIP-734), found across segments."""

from __future__ import annotations

from pathlib import Path

from broker.record.codec import RecordInput, encode_batch
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import BASE_TIMESTAMP_MS, open_log


def batch(*offsets_ms: int) -> bytes:
    """One batch whose records carry these timestamps (after ``BASE_TIMESTAMP_MS``), in order."""
    return encode_batch([RecordInput(None, b"v", (), BASE_TIMESTAMP_MS + ms) for ms in offsets_ms])


def test_the_first_record_with_the_largest_timestamp_across_segments(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(segment_bytes=len(batch(1, 2, 3)) * 2))
    assert log.max_timestamp_offset() is None
    for timestamps in ((5, 1, 2), (3, 9, 4), (9, 0, 1), (2, 2, 2)):  # offsets 0-2, 3-5, 6-8, 9-11
        log.append_as_leader(batch(*timestamps), 1, BASE_TIMESTAMP_MS)
    assert len(log.segments) > 1
    assert log.max_timestamp_offset() == (BASE_TIMESTAMP_MS + 9, 4), "in the middle of a batch; the earlier of two"


def test_records_below_the_log_start_do_not_count(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(segment_bytes=len(batch(1)) * 2))
    for timestamps in ((50,), (7,), (8,), (6,)):
        log.append_as_leader(batch(*timestamps), 1, BASE_TIMESTAMP_MS)
    log.advance_log_start_offset(2)
    log.delete_segments_below_log_start()
    assert log.max_timestamp_offset() == (BASE_TIMESTAMP_MS + 8, 2)
