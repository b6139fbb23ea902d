import resource
import signal
from pathlib import Path

import pytest

from broker.storage.index import OffsetIndex
from broker.storage.time_index import NO_TIMESTAMP, TimeIndex


def test_offset_index_lookup_finds_last_entry_at_or_before(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100)
    index.append(110, 4100)
    index.append(125, 8300)
    assert index.lookup(100) == 0  # before the first entry: start of the file
    assert index.lookup(110) == 4100
    assert index.lookup(124) == 4100
    assert index.lookup(125) == 8300
    assert index.lookup(10_000) == 8300


def test_offset_index_entries_are_relative_int32_pairs_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100)
    index.append(110, 4100)
    index.flush()
    assert path.read_bytes() == (10).to_bytes(4, "big") + (4100).to_bytes(4, "big")


def test_index_entries_wait_in_memory_and_reach_the_file_in_one_write(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0)
    for offset in range(1, 101):
        index.append(offset, offset * 100)
    assert path.stat().st_size == 0 and index.dirty
    assert index.lookup(50) == 5000  # lookups use the in-memory entries
    index.write_pending()
    assert (path.stat().st_size, index.write_count, index.fsync_count) == (800, 1, 0)
    assert index.dirty  # written, not yet durable
    index.fsync()
    assert (index.dirty, index.fsync_count) == (False, 1)
    index.fsync()
    assert index.fsync_count == 1  # nothing new: no fsync


def test_time_index_close_writes_its_pending_entries(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    index = TimeIndex(path, 0)
    index.maybe_append(10, 1)
    index.maybe_append(20, 5)
    assert path.stat().st_size == 0
    index.close()
    assert (index.write_count, path.stat().st_size) == (1, 24)
    assert TimeIndex(path, 0).lookup_before(21) == 5


def test_truncation_cuts_pending_entries_and_written_ones(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0)
    index.append(5, 100)
    index.append(9, 200)
    index.write_pending()
    index.append(14, 300)
    index.append(20, 400)
    index.truncate_to_offset(20)  # only a pending entry goes: the file is untouched
    assert (path.stat().st_size, len(index)) == (16, 3)
    index.truncate_to_offset(9)  # a written entry goes: the file is cut, the pending one dropped
    assert (path.stat().st_size, len(index)) == (8, 1)
    index.append(7, 150)
    index.close()
    assert path.stat().st_size == 16
    assert OffsetIndex(path, 0).lookup(8) == 150


def test_offset_index_reloads_and_truncates(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0)
    for offset, position in [(5, 100), (9, 200), (14, 300)]:
        index.append(offset, position)
    index.close()
    reloaded = OffsetIndex(path, 0)
    assert len(reloaded) == 3 and reloaded.is_consistent(log_size_bytes=400)
    reloaded.truncate_to_offset(9)
    assert reloaded.last_offset() == 5
    assert path.stat().st_size == 8
    reloaded.append(7, 150)
    reloaded.flush()
    assert OffsetIndex(path, 0).lookup(8) == 150


def test_offset_index_refuses_entries_out_of_order(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0)
    index.append(5, 100)
    with pytest.raises(ValueError):
        index.append(5, 200)


def test_offset_index_inconsistencies_are_detected(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0)
    index.append(5, 100)
    index.flush()
    assert not index.is_consistent(log_size_bytes=100)  # points past the log
    path.write_bytes(path.read_bytes() + b"\x00\x01")  # torn entry
    assert not OffsetIndex(path, 0).is_consistent(log_size_bytes=1000)
    path.write_bytes(
        (9).to_bytes(4, "big") + (100).to_bytes(4, "big") + (3).to_bytes(4, "big") + (200).to_bytes(4, "big")
    )
    assert not OffsetIndex(path, 0).is_consistent(log_size_bytes=1000)  # offsets go backwards


def test_time_index_keeps_only_growing_timestamps_and_looks_up_strictly_before(tmp_path: Path) -> None:
    index = TimeIndex(tmp_path / "00000000000000000050.timeindex", 50)
    assert index.last_timestamp == NO_TIMESTAMP
    index.maybe_append(1000, 55)
    index.maybe_append(1000, 60)  # not larger: ignored
    index.maybe_append(2000, 70)
    assert len(index) == 2
    assert index.lookup_before(1000) == 50
    assert index.lookup_before(1001) == 55
    assert index.lookup_before(2000) == 55
    assert index.lookup_before(5000) == 70
    assert index.is_consistent(next_offset=71)
    assert not index.is_consistent(next_offset=70)


def test_time_index_truncation_and_reload(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.timeindex"
    index = TimeIndex(path, 0)
    index.maybe_append(10, 1)
    index.maybe_append(20, 5)
    index.truncate_to_offset(5)
    index.close()
    reloaded = TimeIndex(path, 0)
    assert (reloaded.last_timestamp, reloaded.last_offset()) == (10, 1)
    assert path.stat().st_size == 12


def test_a_failed_write_of_pending_entries_leaves_the_file_whole_and_the_entries_pending(tmp_path: Path) -> None:
    """A file size limit stands in for a full disk: the write is cut short, then refused."""
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0)
    index.append(1, 100)
    index.write_pending()
    for offset in range(2, 102):
        index.append(offset, offset * 100)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8 + 100, hard))
    try:
        with pytest.raises(OSError):
            index.write_pending()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous_handler)
    assert path.stat().st_size == 8 and index.dirty
    index.write_pending()
    reloaded = OffsetIndex(path, 0)
    assert len(reloaded) == 101 and reloaded.is_consistent(log_size_bytes=10_200)
