"""Log compaction on real segment files: latest per key, tombstones, offsets, restart, readers."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from broker.storage.cleaner import compact_log
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig

NOW_MS = 1_700_000_000_000
DAY_MS = 86_400_000


def compact_config(**overrides) -> LogConfig:
    return LogConfig(segment_bytes=1024, cleanup_policy="compact", retention_ms=-1, **overrides)


def open_log(directory: Path, config: LogConfig) -> PartitionLog:
    return PartitionLog.open(directory, config, topic="c", partition=0)


def put(log: PartitionLog, key: str, value: str | None, timestamp_ms: int = NOW_MS, epoch: int = 0) -> int:
    record = RecordInput(key.encode(), None if value is None else value.encode(), (), timestamp_ms)
    return log.append_as_leader(encode_batch([record]), epoch, NOW_MS).base_offset


def visible(log: PartitionLog) -> list[tuple[int, str, str | None]]:
    found: list[tuple[int, str, str | None]] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        read = log.read(offset, 1 << 30)
        for r in iter_records(read.data):
            assert r.key is not None, "every record of a compacted log has a key"
            found.append((r.offset, r.key.decode(), None if r.value is None else r.value.decode()))
        offset = read.next_offset
    return found


@pytest.fixture
def log(tmp_path: Path):
    opened = open_log(tmp_path / "c-0", compact_config())
    yield opened
    opened.close()


def test_keeps_only_the_latest_record_per_key_with_original_offsets(log: PartitionLog) -> None:
    for round_ in range(20):
        for key in ("a", "b", "c"):
            put(log, key, f"{key}{round_}")
    assert len(log.segments) > 3
    end = log.log_end_offset
    stats = compact_log(log, NOW_MS, log.log_end_offset)
    assert stats is not None and stats.records_removed > 0 and stats.bytes_after < stats.bytes_before
    records = visible(log)
    latest = {}
    for offset, key, value in records:
        latest[key] = (offset, value)
    assert {k: v[1] for k, v in latest.items()} == {"a": "a19", "b": "b19", "c": "c19"}
    keys_in_cleaned = [key for offset, key, _ in records if offset < log.segments[-1].base_offset]
    assert len(keys_in_cleaned) == len(set(keys_in_cleaned))  # one per key in the cleaned part
    assert [o for o, _, _ in records] == sorted(o for o, _, _ in records)
    assert log.log_end_offset == end
    assert put(log, "a", "after") == end  # appends go on from the same LEO


def test_active_segment_and_records_above_high_watermark_are_untouched(log: PartitionLog) -> None:
    for round_ in range(20):
        put(log, "k", str(round_))
    high_watermark = log.segments[1].base_offset
    compact_log(log, NOW_MS, high_watermark)
    records = visible(log)
    untouched = [r for r in records if r[0] >= high_watermark]
    assert [r[0] for r in untouched] == list(range(high_watermark, log.log_end_offset))
    assert compact_log(log, NOW_MS, 0) is None


def test_tombstones_kept_until_delete_retention_then_removed(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", compact_config(delete_retention_ms=DAY_MS))
    for round_ in range(10):
        put(log, "gone", f"v{round_}")
        put(log, "stay", f"s{round_}")
    put(log, "gone", None)
    for round_ in range(10):
        put(log, "filler", str(round_))
    compact_log(log, NOW_MS, log.log_end_offset)
    assert [v for _, k, v in visible(log) if k == "gone"] == [None]
    compact_log(log, NOW_MS + 2 * DAY_MS, log.log_end_offset)
    assert [k for _, k, _ in visible(log)].count("gone") == 0
    assert [v for _, k, v in visible(log) if k == "stay"] == ["s9"]
    log.close()


def test_compacted_log_reopens_and_follower_can_copy_it(tmp_path: Path) -> None:
    directory = tmp_path / "r-0"
    log = open_log(directory, compact_config())
    for round_ in range(30):
        put(log, f"k{round_ % 4}", str(round_), epoch=round_ // 10)
    compact_log(log, NOW_MS, log.log_end_offset)
    before, end, epochs = visible(log), log.log_end_offset, log.epoch_cache.entries
    log.close()
    reopened = open_log(directory, compact_config())
    assert visible(reopened) == before and reopened.log_end_offset == end
    assert reopened.epoch_cache.entries == epochs
    follower = open_log(tmp_path / "f-0", compact_config())
    offset = 0
    while offset < end:
        read = reopened.read(offset, 1 << 20)
        follower.append_as_follower(read.data)
        offset = read.next_offset
    assert visible(follower) == before
    reopened.close()
    follower.close()


def test_reader_holding_the_old_segment_still_reads_it(log: PartitionLog) -> None:
    for round_ in range(20):
        put(log, "k", str(round_))
    old_first = log.segments[0]
    compact_log(log, NOW_MS, log.log_end_offset)
    assert log.segments[0] is not old_first
    stale = old_first.read(0, 1 << 20, log.log_end_offset, old_first.size_bytes)
    assert stale is not None and len(list(iter_records(stale.data))) > 1


def test_delete_policy_logs_are_never_compacted(tmp_path: Path) -> None:
    log = open_log(tmp_path / "d-0", LogConfig(segment_bytes=1024))
    for round_ in range(20):
        put(log, "k", str(round_))
    assert compact_log(log, NOW_MS, log.log_end_offset) is None
    assert len(visible(log)) == 20
    log.close()
