"""Reads past a segment's last index entry come from the in-memory tail, byte for byte as the scan gave them."""

from __future__ import annotations

from pathlib import Path

from broker.record.header import iter_batches
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import make_batch, open_log

CONFIG = LogConfig(segment_bytes=2_000, index_interval_bytes=300)


def _fill(log: PartitionLog, batches: int) -> None:
    for n in range(batches):
        log.append_as_leader(make_batch(1 + n % 4, value_bytes=10 + 7 * (n % 5), tag=n), 0, 1)


def _expected(log: PartitionLog, start: int, max_bytes: int, bound: int) -> bytes:
    """What a read must return, from the whole files walked header by header (no index, no tail)."""
    out = b""
    for segment in log.segments:
        data = segment.pread(segment.size_bytes, 0)
        for header in iter_batches(data):
            if header.last_offset < start:
                continue
            if header.last_offset >= bound or (out and len(out) + header.size > max_bytes):
                return out
            out += data[header.position : header.position + header.size]
        if out:
            return out
    return out


def _check_every_offset(log: PartitionLog) -> None:
    end = log.log_end_offset
    for bound in (end, end - 3, end // 2):
        for max_bytes in (1, 250, 1 << 20):
            for start in range(log.log_start_offset, bound):
                assert log.read(start, max_bytes, bound).data == _expected(log, start, max_bytes, bound), (
                    start,
                    max_bytes,
                    bound,
                )


def test_reads_from_every_offset_match_a_full_walk_across_index_entries_and_rolls(tmp_path: Path) -> None:
    log = open_log(tmp_path, CONFIG)
    _fill(log, 60)
    assert len(log.segments) > 2 and all(len(s.index) > 1 for s in log.segments[:-1])
    _check_every_offset(log)


def test_reads_match_after_truncation_and_appends_past_it(tmp_path: Path) -> None:
    for name, config in (("indexed", CONFIG), ("unindexed", LogConfig(index_interval_bytes=1 << 20))):
        log = open_log(tmp_path / name, config)
        _fill(log, 40)
        for cut in (9, 1):
            log.truncate_to(log.log_end_offset - cut)
            _check_every_offset(log)
            _fill(log, 2)
            _check_every_offset(log)


def test_reads_match_after_reopening_the_log(tmp_path: Path) -> None:
    log = open_log(tmp_path, CONFIG)
    _fill(log, 30)
    before = [log.read(o, 1 << 20).data for o in range(log.log_end_offset)]
    log.close()
    reopened = open_log(tmp_path, CONFIG)
    assert [reopened.read(o, 1 << 20).data for o in range(reopened.log_end_offset)] == before
    _fill(reopened, 5)
    _check_every_offset(reopened)


def test_a_batch_past_the_committed_size_is_not_found(tmp_path: Path) -> None:
    log = open_log(tmp_path, LogConfig(index_interval_bytes=1 << 20))
    _fill(log, 3)
    segment = log.segments[-1]
    committed = segment.size_bytes
    last_offset = log.log_end_offset
    _fill(log, 1)
    assert segment.find_batch(last_offset, committed) is None
    found = segment.find_batch(last_offset, segment.size_bytes)
    assert found is not None and found.position == committed
