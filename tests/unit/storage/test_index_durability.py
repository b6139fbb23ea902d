"""When index files reach the disk: one fsync per group commit, indexes durable before recovery trusts them."""

import os
from pathlib import Path

import pytest

from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import BASE_TIMESTAMP_MS, make_batch, open_log

CONFIG = LogConfig(segment_bytes=2_000, index_interval_bytes=100)
BATCH_BYTES = len(make_batch(2, value_bytes=60))


def _append(log: PartitionLog, i: int) -> None:
    """Batch ``i``: timestamps mostly grow but step back now and then, as producers' clocks do."""
    timestamp = BASE_TIMESTAMP_MS + 1000 * i - (2500 if i % 5 == 4 else 0)
    log.append_as_leader(make_batch(2, value_bytes=60, timestamp_ms=timestamp, tag=i), 0, 0)


def _fill_active_segment(log: PartitionLog) -> int:
    """Append until the next batch rolls; return how many batches were appended."""
    count = 0
    while log.segments[-1].size_bytes + BATCH_BYTES <= CONFIG.segment_bytes:
        _append(log, count)
        count += 1
    return count


def test_a_group_commit_fsyncs_the_active_log_file_only(log_dir: Path) -> None:
    log = open_log(log_dir, CONFIG)
    active = log.segments[-1]
    fsyncs_before = log.fsync_count
    for i in range(6):
        _append(log, i)
        log.flush()
        assert log.recovery_point == log.log_end_offset
    assert len(active.index) > 2 and len(active.time_index) > 2
    assert (active.fsync_count, active.write_count) == (6, 6)  # one write per append, one fsync per flush
    assert (active.index.fsync_count, active.time_index.fsync_count) == (0, 0)
    assert (active.index.write_count, active.time_index.write_count) == (0, 0)  # entries wait in memory
    assert log.fsync_count - fsyncs_before == 6
    log.flush()
    assert log.fsync_count - fsyncs_before == 6  # nothing new reached the disk: not counted


def test_a_rolled_segments_indexes_are_fsynced_in_the_first_flush_after_the_roll(log_dir: Path) -> None:
    log = open_log(log_dir, CONFIG)
    appended = _fill_active_segment(log)
    sealed = log.segments[-1]
    _append(log, appended)  # rolls; the recovery point is still inside ``sealed``
    assert len(log.segments) == 2 and log.recovery_point < sealed.next_offset
    assert sealed.index.path.stat().st_size == 8 * len(sealed.index)  # written at the roll, one write each
    assert (sealed.index.write_count, sealed.time_index.write_count) == (1, 1)
    assert sealed.index.dirty and sealed.time_index.dirty
    log.flush()
    assert log.recovery_point == log.log_end_offset > log.segments[-1].base_offset
    assert not sealed.needs_flush
    assert (sealed.index.fsync_count, sealed.time_index.fsync_count) == (1, 1)
    for i in range(3):
        _append(log, appended + 1 + i)
        log.flush()
    assert (sealed.index.fsync_count, sealed.time_index.fsync_count) == (1, 1)
    assert log.segments[-1].index.fsync_count == 0


def test_a_roll_right_at_the_recovery_point_fsyncs_the_sealed_indexes_at_once(log_dir: Path) -> None:
    """Recovery trusts every segment before the one holding the recovery point: here that is at once."""
    log = open_log(log_dir, CONFIG)
    appended = _fill_active_segment(log)
    log.flush()
    sealed = log.segments[-1]
    assert log.recovery_point == sealed.next_offset
    _append(log, appended)  # rolls: the new segment's base offset is the recovery point
    assert log.segments[-1].base_offset == log.recovery_point
    assert not sealed.needs_flush
    assert (sealed.index.fsync_count, sealed.time_index.fsync_count) == (1, 1)


def test_a_roll_during_the_log_fsync_still_gets_the_sealed_indexes_fsynced(log_dir: Path) -> None:
    """The new recovery point may equal the new segment's base: recovery would then trust the sealed one."""
    log = open_log(log_dir, CONFIG)
    _fill_active_segment(log)
    target = log.log_end_offset  # what a flush starting now aims at
    sealed = log.segments[-1]
    sealed.sync_log()  # that flush's fsync of the then active log file
    _append(log, 99)  # a roll lands meanwhile
    assert log.segments[-1].base_offset == target and sealed.index.dirty
    log._advance_recovery_point(target, synced=True)
    assert log.recovery_point == target
    assert not sealed.needs_flush and sealed.index.fsync_count == 1


def _lookups(log: PartitionLog) -> tuple[list[tuple[int, int]], list[int | None]]:
    """Every offset's batch bounds and every timestamp's first offset: what readers are answered."""
    offsets = [(log.read(o, 1).first_batch_offset, log.read(o, 1).next_offset) for o in range(log.log_end_offset)]
    last_ms = BASE_TIMESTAMP_MS + 1000 * (log.log_end_offset // 2 + 2)
    timestamps = [log.offset_for_timestamp(ms) for ms in range(BASE_TIMESTAMP_MS - 3000, last_ms, 250)]
    return offsets, timestamps


def _damage(path: Path, damage: str) -> None:
    if damage == "deleted":
        path.unlink()
    elif damage == "torn":
        os.truncate(path, max(path.stat().st_size - 3, 0))
    elif damage == "zero-filled tail":
        size = path.stat().st_size
        with path.open("r+b") as file:
            file.seek(max(size - 24, 0))
            file.write(bytes(24))  # ext4 after a crash: the size grew, the data did not land
    else:
        raise AssertionError(damage)


@pytest.mark.parametrize("damage", ["deleted", "torn", "zero-filled tail"])
def test_after_a_crash_recovery_rebuilds_the_indexes_and_lookups_answer_as_before(log_dir: Path, damage: str) -> None:
    log = open_log(log_dir, CONFIG)
    for i in range(50):
        _append(log, i)
        if i % 4 == 3:
            log.flush()
    log.flush()
    assert len(log.segments) >= 3
    expected = _lookups(log)
    recovery_point, log_end_offset = log.recovery_point, log.log_end_offset
    with (log_dir / f"{log.segments[-1].base_offset:020d}.log").open("ab") as active_log:
        active_log.write(make_batch(3, tag=77)[:-20])  # a torn append that never returned
    for path in log_dir.glob("*index"):
        _damage(path, damage)

    recovered = open_log(log_dir, CONFIG, recovery_point=recovery_point)  # no close: a crash

    assert recovered.log_end_offset == log_end_offset
    assert [len(s.index) for s in recovered.segments] == [len(s.index) for s in log.segments]
    assert [len(s.time_index) for s in recovered.segments] == [len(s.time_index) for s in log.segments]
    assert [s.max_timestamp_ms for s in recovered.segments] == [s.max_timestamp_ms for s in log.segments]
    assert _lookups(recovered) == expected


def test_an_append_of_several_batches_is_one_write_on_the_log_file(log_dir: Path) -> None:
    log = open_log(log_dir, CONFIG)
    active = log.segments[-1]
    log.append_as_leader(b"".join(make_batch(2, value_bytes=60, tag=i) for i in range(5)), 0, 0)
    assert (active.write_count, len(active.index)) == (1, 4)
    assert (active.index.write_count, active.time_index.write_count) == (0, 0)
