from pathlib import Path

from broker.record.header import iter_batches
from broker.storage.epoch_cache import EpochEntry
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import make_batch, open_log

DAY_MS = 24 * 3600 * 1000


def _filled_log(log_dir: Path, batches: int = 10, records: int = 2, epochs: tuple[int, ...] = (0,)):
    batch = make_batch(records)
    log = open_log(log_dir, LogConfig(segment_bytes=len(batch) * 3, index_interval_bytes=0))
    for i in range(batches):
        log.append_as_leader(make_batch(records, tag=i), epochs[min(i * len(epochs) // batches, len(epochs) - 1)], 0)
    return log


def test_truncate_to_drops_later_segments_and_fixes_the_active_one(log_dir: Path) -> None:
    log = _filled_log(log_dir, epochs=(1, 2))  # epoch 2 starts at offset 10
    log.truncate_to(8)
    assert log.log_end_offset == 8
    assert [s.base_offset for s in log.segments] == [0, 6]
    assert not (log_dir / "00000000000000000012.log").exists()
    assert log.epoch_cache.entries == [EpochEntry(1, 0)]
    appended = log.append_as_leader(make_batch(1), 3, 0)
    assert appended.base_offset == 8
    reopened = open_log(log_dir)
    assert reopened.log_end_offset == 9
    assert [h.base_offset for h in iter_batches(reopened.read(6, 1 << 20).data)] == [6, 8]


def test_truncate_to_the_first_segment_base_empties_the_log_and_keeps_it_usable(log_dir: Path) -> None:
    """Found by the seeded simulation: a follower whose whole log diverged truncates to 0.

    It used to delete every segment file and then fail (no segment below the offset to
    cut), leaving the log pointing at deleted files.
    """
    log = _filled_log(log_dir, epochs=(1, 2))
    log.truncate_to(0)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (0, 0, 0)
    assert log.epoch_cache.entries == []
    assert log.append_as_follower(make_batch(2), 0).base_offset == 0
    assert open_log(log_dir).log_end_offset == 2


def test_truncate_inside_a_batch_removes_the_whole_batch(log_dir: Path) -> None:
    log = _filled_log(log_dir)
    log.truncate_to(5)  # batch 4..5
    assert log.log_end_offset == 4


def test_truncate_at_or_past_the_end_changes_nothing(log_dir: Path) -> None:
    log = _filled_log(log_dir)
    log.truncate_to(20)
    log.truncate_to(99)
    assert log.log_end_offset == 20


def test_truncate_fully_and_start_at(log_dir: Path) -> None:
    log = _filled_log(log_dir)
    log.truncate_fully_and_start_at(500)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (500, 500, 0)
    assert log.epoch_cache.entries == []
    assert log.append_as_leader(make_batch(1), 5, 0).base_offset == 500
    assert sorted(p.name for p in log_dir.glob("*.log")) == ["00000000000000000500.log"]
    assert open_log(log_dir).log_end_offset == 501


def test_advance_log_start_offset_trims_the_epoch_cache(log_dir: Path) -> None:
    log = _filled_log(log_dir, epochs=(1, 2))
    assert log.advance_log_start_offset(12)
    assert not log.advance_log_start_offset(11)
    assert log.log_start_offset == 12
    assert log.epoch_cache.entries == [EpochEntry(2, 12)]


def test_retention_by_size_deletes_oldest_whole_segments_below_hw(log_dir: Path) -> None:
    log = _filled_log(log_dir)  # segments at 0, 6, 12, 18
    segment_bytes = log.segments[0].size_bytes
    batch_bytes = log.segments[-1].size_bytes
    retention_bytes = segment_bytes + batch_bytes  # keeps exactly the last two segments
    log.update_config(LogConfig(segment_bytes=segment_bytes, retention_ms=-1, retention_bytes=retention_bytes))
    assert log.delete_retained_segments(now_ms=0, high_watermark=20) == 2
    assert log.size_bytes == retention_bytes
    assert [s.base_offset for s in log.segments] == [12, 18]
    assert log.log_start_offset == 12
    assert not (log_dir / "00000000000000000000.log").exists()


def test_retention_never_passes_the_high_watermark_or_the_active_segment(log_dir: Path) -> None:
    log = _filled_log(log_dir)
    log.update_config(LogConfig(retention_ms=1))
    assert log.delete_retained_segments(now_ms=10**15, high_watermark=11) == 1  # segment 6..11 reaches 11
    assert log.log_start_offset == 6
    assert log.delete_retained_segments(now_ms=10**15, high_watermark=20) == 2
    assert [s.base_offset for s in log.segments] == [18]  # the active segment stays


def test_retention_by_time_uses_the_largest_timestamp(log_dir: Path) -> None:
    batch = make_batch(1, timestamp_ms=1000)
    log = open_log(log_dir, LogConfig(segment_bytes=len(batch) * 2, retention_ms=DAY_MS))
    for timestamp_ms in (1000, 1000, 1000, 5 * DAY_MS, 1000, 1000):
        log.append_as_leader(make_batch(1, timestamp_ms=timestamp_ms), 0, 0)
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    assert log.delete_retained_segments(now_ms=3 * DAY_MS, high_watermark=6) == 1  # 2..3 holds a newer record
    assert log.log_start_offset == 2


def test_unlimited_retention_deletes_only_below_log_start_offset(log_dir: Path) -> None:
    log = _filled_log(log_dir)
    log.update_config(LogConfig(retention_ms=-1))
    assert log.delete_retained_segments(now_ms=10**15, high_watermark=20) == 0
    log.advance_log_start_offset(13)
    assert log.delete_retained_segments(now_ms=10**15, high_watermark=20) == 2
    assert log.log_start_offset == 13


def test_a_follower_deletes_only_whole_segments_below_its_log_start(log_dir: Path) -> None:
    log = _filled_log(log_dir)  # segments at 0, 6, 12, 18
    log.update_config(LogConfig(retention_ms=1, retention_bytes=0))
    assert log.delete_segments_below_log_start() == 0, "a follower's own retention rules never run"
    log.advance_log_start_offset(13)
    assert log.delete_segments_below_log_start() == 2
    assert [s.base_offset for s in log.segments] == [12, 18]
    assert not (log_dir / "00000000000000000006.log").exists()
    assert log.log_start_offset == 13


def test_offset_for_timestamp_finds_the_exact_record(log_dir: Path) -> None:
    from broker.record.codec import RecordInput, encode_batch

    log = open_log(log_dir, LogConfig(segment_bytes=400, index_interval_bytes=0))
    for base in range(0, 60, 3):  # records at t = 100 + offset, three per batch
        log.append_as_leader(encode_batch([RecordInput(b"k", b"v", (), 100 + base + i) for i in range(3)]), 0, 0)
    assert len(log.segments) > 2
    assert log.offset_for_timestamp(0) == 0
    assert log.offset_for_timestamp(131) == 31
    assert log.offset_for_timestamp(159) == 59
    assert log.offset_for_timestamp(160) is None
    log.advance_log_start_offset(40)
    assert log.offset_for_timestamp(120) == 40
