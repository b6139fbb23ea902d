import threading
from pathlib import Path

import pytest

from broker.errors import (
    CorruptRecord,
    FencedLeaderEpoch,
    OffsetOutOfRange,
    RecordTooLarge,
    UnexpectedAppendOffset,
)
from broker.record.decode import decode_batch
from broker.record.header import iter_batches, stamp
from broker.storage.epoch_cache import EpochEntry
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import BASE_TIMESTAMP_MS, make_batch, open_log


def test_leader_append_assigns_consecutive_offsets_and_stamps_epoch(log_dir: Path) -> None:
    log = open_log(log_dir)
    first = log.append_as_leader(make_batch(3), leader_epoch=2, now_ms=5)
    second = log.append_as_leader(make_batch(2) + make_batch(4), leader_epoch=2, now_ms=6)
    assert (first.base_offset, first.last_offset, first.batch_count) == (0, 2, 1)
    assert (second.base_offset, second.last_offset, second.batch_count) == (3, 8, 2)
    assert second.log_append_time_ms == 6 and second.max_timestamp == BASE_TIMESTAMP_MS
    assert log.log_end_offset == 9
    headers = list(iter_batches(log.read(0, 1 << 20).data))  # CRC still valid after stamping
    assert [(h.base_offset, h.partition_leader_epoch) for h in headers] == [(0, 2), (3, 2), (5, 2)]
    assert log.epoch_cache.entries == [EpochEntry(2, 0)]
    log.flush()  # a new log writes its epoch checkpoint with its first flush
    assert (log_dir / "leader-epoch-checkpoint").read_text() == "0\n1\n2 0\n"


def test_new_leader_epoch_is_recorded_at_the_log_end_offset(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.append_as_leader(make_batch(3), 0, 0)
    log.append_as_leader(make_batch(1), 4, 0)
    assert log.epoch_cache.entries == [EpochEntry(0, 0), EpochEntry(4, 3)]
    with pytest.raises(FencedLeaderEpoch):
        log.append_as_leader(make_batch(1), 3, 0)
    assert log.log_end_offset == 4


def test_a_corrupt_batch_anywhere_means_nothing_is_appended(log_dir: Path) -> None:
    log = open_log(log_dir)
    corrupt = bytearray(make_batch(2))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        log.append_as_leader(make_batch(1) + bytes(corrupt), 0, 0)
    with pytest.raises(CorruptRecord):
        log.append_as_leader(make_batch(1) + make_batch(1)[:-3], 0, 0)  # torn second batch
    with pytest.raises(CorruptRecord):
        log.append_as_leader(b"", 0, 0)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_batch_over_max_message_bytes_is_refused(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(max_message_bytes=500))
    with pytest.raises(RecordTooLarge) as raised:
        log.append_as_leader(make_batch(1) + make_batch(1, value_bytes=600), 0, 0)
    assert raised.value.details["max_message_bytes"] == 500
    assert log.log_end_offset == 0


def test_read_returns_whole_batches_from_the_one_holding_the_offset(log_dir: Path) -> None:
    log = open_log(log_dir)
    sizes = [len(make_batch(count)) for count in (3, 3, 3)]
    for count in (3, 3, 3):
        log.append_as_leader(make_batch(count), 0, 0)
    result = log.read(4, max_bytes=sizes[1] + sizes[2])
    assert (result.first_batch_offset, result.next_offset, result.high_bound) == (3, 9, 9)
    assert [h.base_offset for h in iter_batches(result.data)] == [3, 6]
    limited = log.read(4, max_bytes=sizes[1] + 1)
    assert [h.base_offset for h in iter_batches(limited.data)] == [3]


def test_read_returns_one_whole_batch_even_when_larger_than_max_bytes(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.append_as_leader(make_batch(5, value_bytes=400), 0, 0)
    result = log.read(2, max_bytes=10)
    assert len(result.data) > 10 and result.next_offset == 5


def test_read_stops_below_the_high_watermark_bound(log_dir: Path) -> None:
    log = open_log(log_dir)
    for _ in range(3):
        log.append_as_leader(make_batch(2), 0, 0)
    below_hw = log.read(0, 1 << 20, max_offset=4)
    assert [h.base_offset for h in iter_batches(below_hw.data)] == [0, 2]
    assert (below_hw.next_offset, below_hw.high_bound) == (4, 4)
    at_hw = log.read(4, 1 << 20, max_offset=4)
    assert (at_hw.data, at_hw.next_offset) == (b"", 4)
    inside_batch_crossing_hw = log.read(2, 1 << 20, max_offset=3)
    assert inside_batch_crossing_hw.data == b""


def test_read_at_log_end_is_empty_and_outside_the_range_raises(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.append_as_leader(make_batch(2), 0, 0)
    assert log.read(2, 100).data == b""
    with pytest.raises(OffsetOutOfRange) as raised:
        log.read(3, 100)
    assert raised.value.details == {"log_start_offset": 0, "log_end_offset": 2}
    log.advance_log_start_offset(1)
    with pytest.raises(OffsetOutOfRange):
        log.read(0, 100)
    assert log.read(1, 100).first_batch_offset == 0  # whole batch holding the start offset


def test_segments_roll_on_size_and_reads_cross_them(log_dir: Path) -> None:
    batch = make_batch(2)
    log = open_log(log_dir, LogConfig(segment_bytes=len(batch) * 3, index_interval_bytes=0))
    for _ in range(10):
        log.append_as_leader(batch, 0, 0)
    assert [s.base_offset for s in log.segments] == [0, 6, 12, 18]
    assert (log_dir / "00000000000000000006.log").exists()
    assert (log_dir / "00000000000000000012.index").exists()
    offset = 0
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        assert result.first_batch_offset == offset
        offset = result.next_offset
    assert offset == 20


def test_segments_roll_on_age_of_first_batch(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(segment_ms=1000))
    log.append_as_leader(make_batch(1, timestamp_ms=10_000), 0, now_ms=10_000)
    log.append_as_leader(make_batch(1, timestamp_ms=10_500), 0, now_ms=10_900)
    assert len(log.segments) == 1
    log.append_as_leader(make_batch(1, timestamp_ms=11_100), 0, now_ms=11_100)
    assert [s.base_offset for s in log.segments] == [0, 2]


def _leader_bytes(epoch_and_counts: list[tuple[int, int]]) -> bytes:
    """Batches as a leader would have stamped them: consecutive offsets, given epochs."""
    out = bytearray()
    offset = 0
    for epoch, count in epoch_and_counts:
        batch = bytearray(make_batch(count))
        stamp(batch, 0, offset, epoch)
        out += batch
        offset += count
    return bytes(out)


def test_follower_append_keeps_leader_offsets_and_learns_epochs(log_dir: Path) -> None:
    log = open_log(log_dir)
    info = log.append_as_follower(_leader_bytes([(1, 2), (1, 3), (4, 1)]))
    assert (info.base_offset, info.last_offset, info.batch_count) == (0, 5, 3)
    assert log.epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(4, 5)]
    assert [h.partition_leader_epoch for h in iter_batches(log.read(0, 1 << 20).data)] == [1, 1, 4]
    assert open_log(log_dir).epoch_cache.entries == [EpochEntry(1, 0), EpochEntry(4, 5)]


def test_follower_append_not_at_log_end_is_refused(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.append_as_follower(_leader_bytes([(1, 2)]))
    wrong = bytearray(make_batch(1))
    stamp(wrong, 0, 5, 1)
    with pytest.raises(UnexpectedAppendOffset) as raised:
        log.append_as_follower(bytes(wrong))
    assert raised.value.details == {"first_offset": 5, "log_end_offset": 2}
    assert log.log_end_offset == 2


def test_follower_restarting_inside_a_leader_batch_starts_at_its_base(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.truncate_fully_and_start_at(3)  # the leader's log start offset, inside batch 2..5
    batch = bytearray(make_batch(4))
    stamp(batch, 0, 2, 7)
    log.append_as_follower(bytes(batch))
    assert (log.log_start_offset, log.log_end_offset) == (2, 6)


def test_records_read_back_decode_with_their_assigned_offsets(log_dir: Path) -> None:
    log = open_log(log_dir)
    log.append_as_leader(make_batch(2, tag=1), 0, 0)
    log.append_as_leader(make_batch(3, tag=2), 0, 0)
    result = log.read(2, 1 << 20)
    _, records = decode_batch(result.data)
    assert [record.offset for record in records] == [2, 3, 4]
    assert records[0].value is not None
    assert records[0].value.startswith(b"00000002")


def test_concurrent_readers_never_see_a_partial_batch(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(segment_bytes=20_000, index_interval_bytes=256))
    appends = 400
    failures: list[str] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            end = log.log_end_offset
            offset = 0
            while offset < end:
                result = log.read(offset, 4096)
                headers = list(iter_batches(result.data))  # CRC-checks every batch
                if not headers or headers[0].base_offset > offset:
                    failures.append(f"read at {offset} returned {result}")
                    return
                offset = result.next_offset

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for thread in readers:
        thread.start()
    for i in range(appends):
        log.append_as_leader(make_batch(1 + i % 4, value_bytes=64, tag=i), 0, 0)
    done.set()
    for thread in readers:
        thread.join()
    assert failures == []
    assert len(log.segments) > 3


def test_follower_batches_with_an_offset_gap_are_refused_whole(log_dir: Path) -> None:
    log = open_log(log_dir)
    first, second = bytearray(make_batch(2)), bytearray(make_batch(1))
    stamp(first, 0, 0, 1)
    stamp(second, 0, 3, 1)  # offset 2 is missing
    with pytest.raises(CorruptRecord, match="not contiguous"):
        log.append_as_follower(bytes(first + second))
    assert log.log_end_offset == 0 and log.size_bytes == 0
