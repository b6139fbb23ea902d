"""Fetched records read lazily hand out exactly what the eager decoder reads, split and skipped as before."""

from __future__ import annotations

import inspect
import pickle
import struct
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING

import pytest

from broker.client.types import FetchResult, TopicPartition
from broker.errors import CorruptRecord
from broker.record.codec import LOG_APPEND_TIME, Record, encode_batch
from broker.record.compression import GZIP, LZ4, NONE, ZSTD
from broker.record.decode import BatchColumns, iter_batches_with_records
from broker.record.header import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    CRC_OFFSET,
    RECORDS_COUNT_OFFSET,
    TRANSACTIONAL_MASK,
    crc32c,
)
from broker.record.lazy import LazyBatch, checked_batch
from broker.storage.compacted_batch import BatchSpan, encode_span
from consumer.fetch_buffer import CompletedFetch, Taken
from consumer.records import ConsumerRecord

if TYPE_CHECKING:
    from _typeshed import TraceFunction

TP = TopicPartition("orders", 2)
TS = 1_700_000_000_000
FIELDS = ConsumerRecord.__match_args__


def _span(base: int, last: int, attributes: int = 0, epoch: int = 3) -> BatchSpan:
    return BatchSpan(base, last, epoch, attributes, TS + 50, 7, 0, 0)


def _mixed_log(compression: int) -> bytes:
    """Offsets 0-23: keyed records with headers, nulls, LogAppendTime, transactional, control and compacted batches."""
    keyed = [
        (f"k{i}".encode(), f"v{i}".encode() * (i + 1), [("trace", str(i).encode()), ("ünï", None)], TS + i)
        for i in range(6)
    ]
    nulls = [(None, b"only value", (), TS), (b"only key", None, (), TS + 1), (None, None, (), TS + 2), (b"", b"", ())]
    return b"".join(
        (
            encode_batch(keyed, base_offset=0, compression=compression, partition_leader_epoch=1),
            encode_batch(nulls, base_offset=6, compression=compression, partition_leader_epoch=1),
            encode_batch(
                [(b"a", b"x", (), TS)] * 3,
                base_offset=10,
                compression=compression,
                timestamp_type=LOG_APPEND_TIME,
                partition_leader_epoch=2,
            ),
            encode_batch(
                [(b"t", b"in a transaction", (), TS)] * 2,
                base_offset=13,
                compression=compression,
                is_transactional=True,
                producer_id=7,
                producer_epoch=0,
                base_sequence=0,
                partition_leader_epoch=2,
            ),
            encode_span(
                _span(15, 15, CONTROL_MASK | TRANSACTIONAL_MASK),
                [Record(15, TS, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")],
            ),
            encode_span(_span(16, 21), [Record(17, TS + 1, b"kept", b"a"), Record(20, TS + 4, b"kept", b"b")]),
            encode_span(_span(22, 22), []),
            encode_batch([(b"last", b"z", (), TS)], base_offset=23, compression=compression, partition_leader_epoch=3),
        )
    )


def _fetch(data: bytes, fetch_offset: int = 0, high_watermark: int = 24, next_offset: int = 24) -> CompletedFetch:
    return CompletedFetch(TP, 0, fetch_offset, FetchResult(data, high_watermark, 0, high_watermark, next_offset))


def _eager(data: bytes, lower: int, high_watermark: int) -> list[tuple[object, ...]]:
    """What the consumer handed out before it read lazily: every record of every data batch, filtered."""
    return [
        (*TP, r.offset, r.timestamp, h.timestamp_type, r.key, r.value, r.headers, h.partition_leader_epoch)
        for h, records in iter_batches_with_records(data)
        if not h.is_control
        for r in records
        if lower <= r.offset < high_watermark
    ]


def _fields(records: list[ConsumerRecord]) -> list[tuple[object, ...]]:
    return [tuple(getattr(r, name) for name in FIELDS) for r in records]


def _take_all(completed: CompletedFetch, position: int, max_records: int) -> tuple[list[ConsumerRecord], list[Taken]]:
    records: list[ConsumerRecord] = []
    takes: list[Taken] = []
    epoch = None
    while True:
        taken = completed.take(position, max_records, epoch)
        takes.append(taken)
        records.extend(taken.records)
        if taken.records:
            position, epoch = taken.consumed_to, taken.leader_epoch
        if taken.exhausted:
            return records, takes
        assert taken.records, "a take that is not exhausted hands out something"


@pytest.mark.parametrize("compression", [NONE, GZIP, LZ4, ZSTD])
@pytest.mark.parametrize("max_records", [1, 3, 4, 1000])
def test_every_field_equals_the_eager_decoders(compression: int, max_records: int) -> None:
    data = _mixed_log(compression)
    records, takes = _take_all(_fetch(data), 0, max_records)
    expected = _eager(data, 0, 24)
    assert len(expected) == 18 and {row[4] for row in expected} == {0, 1}
    assert _fields(records) == expected
    assert all(len(t.records) <= max_records for t in takes)
    assert takes[-1].next_offset == 24


@pytest.mark.parametrize("max_records", [1, 2, 5, 100])
def test_a_position_and_a_high_watermark_inside_batches_cut_them(max_records: int) -> None:
    data = _mixed_log(NONE)
    records, takes = _take_all(_fetch(data, fetch_offset=3, high_watermark=12, next_offset=12), 4, max_records)
    assert _fields(records) == _eager(data, 4, 12)
    assert [r.offset for r in records] == [4, 5, 6, 7, 8, 9, 10, 11]
    assert takes[-1].next_offset == 12 and takes[-1].exhausted


def test_a_split_batch_goes_on_from_the_next_record_and_positions_follow() -> None:
    data = encode_batch([(None, b"%d" % i, (), TS + i) for i in range(5)], base_offset=40, partition_leader_epoch=4)
    completed = _fetch(data, fetch_offset=40, high_watermark=45, next_offset=45)
    first = completed.take(40, 2, None)
    assert [r.offset for r in first.records] == [40, 41] and not first.exhausted
    assert (first.consumed_to, first.next_offset, first.leader_epoch) == (42, 42, 4)
    second = completed.take(42, 2, 4)
    assert [r.value for r in second.records] == [b"2", b"3"] and second.consumed_to == 44 and not second.exhausted
    last = completed.take(44, 2, 4)
    assert [r.offset for r in last.records] == [44] and last.exhausted and last.next_offset == 45


def test_records_below_a_position_that_moved_ahead_are_skipped() -> None:
    completed = _fetch(encode_batch([(None, b"v", (), TS)] * 10, base_offset=0), high_watermark=10, next_offset=10)
    assert [r.offset for r in completed.take(0, 3, None).records] == [0, 1, 2]
    later = completed.take(7, 100, None)
    assert [r.offset for r in later.records] == [7, 8, 9] and later.exhausted


def test_compacted_gaps_and_empty_batches_are_stepped_over() -> None:
    data = encode_span(_span(16, 21), [Record(17, TS, b"k", b"a"), Record(20, TS, b"k", b"b")]) + encode_span(
        _span(22, 25), []
    )
    taken = _fetch(data, fetch_offset=16, high_watermark=26, next_offset=26).take(16, 100, None)
    assert [r.offset for r in taken.records] == [17, 20]
    assert taken.exhausted and taken.next_offset == 26 and taken.consumed_to == 22


def test_a_batch_wholly_handed_out_is_decoded_only_when_a_field_is_read() -> None:
    data = encode_batch([(None, b"v", (), TS)] * 4, base_offset=0) + encode_batch(
        [(None, b"w", (), TS)] * 4, base_offset=4
    )
    taken = _fetch(data, high_watermark=8, next_offset=8).take(0, 100, None)
    batches = [r._batch for r in taken.records]
    assert all(batch.columns is None for batch in batches), "handing out whole batches decodes nothing"
    assert taken.consumed_to == 8 and taken.exhausted
    assert taken.records[5].value == b"w"
    assert batches[0].columns is None and batches[5].columns is not None, "a read decodes only its own batch"


def test_a_producers_batch_split_at_the_position_the_watermark_and_the_budget_stays_undecoded() -> None:
    data = encode_batch([(None, b"%d" % i, (), TS) for i in range(10)], base_offset=100)
    completed = _fetch(data, fetch_offset=100, high_watermark=108, next_offset=108)
    first = completed.take(102, 3, None)
    second = completed.take(first.consumed_to, 100, None)
    assert (first.consumed_to, second.consumed_to, second.next_offset, second.exhausted) == (105, 108, 108, True)
    assert first.records[0]._batch.columns is None
    assert [r.offset for r in first.records + second.records] == list(range(102, 108))
    assert [r.value for r in second.records] == [b"5", b"6", b"7"]


@pytest.mark.parametrize(
    ("span", "offsets"),
    [(_span(0, 2), [0, 0, 0]), (_span(0, 2), [0, 2, 1]), (_span(0, 5), [1, 7]), (_span(0, 5), [3, 3])],
)
def test_record_offsets_that_break_the_batch_invariant_fail_on_read(span: BatchSpan, offsets: list[int]) -> None:
    """Handed out under offsets its header implies, a record must not read back another one."""
    data = encode_span(span, [Record(offset, TS, None, b"v") for offset in offsets])
    taken = _fetch(data, high_watermark=10, next_offset=10).take(0, 100, None)
    with pytest.raises(CorruptRecord, match="do not increase"):
        _ = taken.records[0].offset


def test_a_corrupted_batch_is_refused_when_taken() -> None:
    data = bytearray(encode_batch([(b"k", b"v" * 20, (), TS)] * 3, base_offset=0))
    data[-5] ^= 0xFF
    with pytest.raises(CorruptRecord, match="CRC"):
        _fetch(bytes(data), high_watermark=3, next_offset=3).take(0, 100, None)


def test_a_corrupted_batch_after_good_ones_is_reached_after_them_and_never_stepped_over() -> None:
    good = encode_batch([(None, b"good", (), TS)] * 3, base_offset=0)
    bad = bytearray(encode_batch([(None, b"bad!", (), TS)] * 3, base_offset=3))
    bad[-2] ^= 0xFF
    completed = _fetch(good + bytes(bad), high_watermark=6, next_offset=6)
    first = completed.take(0, 100, None)
    assert [r.value for r in first.records] == [b"good"] * 3
    assert not first.exhausted and first.consumed_to == 3
    for _ in range(2):
        with pytest.raises(CorruptRecord, match="CRC"):
            completed.take(3, 100, None)


def test_a_batch_whose_records_disagree_with_its_checked_header_fails_on_read() -> None:
    """Only a broken producer's encoder can write this (the CRC is right): the read of a field says so."""
    lying = bytearray(encode_span(_span(0, 2), [Record(0, TS, b"k", b"a"), Record(1, TS, b"k", b"b")]))
    struct.pack_into(">i", lying, RECORDS_COUNT_OFFSET, 3)
    struct.pack_into(">I", lying, CRC_OFFSET, crc32c(memoryview(lying)[ATTRIBUTES_OFFSET:]))
    taken = _fetch(bytes(lying), high_watermark=3, next_offset=3).take(0, 100, None)
    assert len(taken.records) == 3
    with pytest.raises(CorruptRecord, match="declares 3 records"):
        _ = taken.records[0].value


def test_an_older_epoch_inside_a_split_take_stops_at_the_first_record_of_its_batch() -> None:
    data = encode_batch([(None, b"a", (), TS)] * 3, base_offset=0, partition_leader_epoch=5) + encode_batch(
        [(None, b"b", (), TS)] * 3, base_offset=3, partition_leader_epoch=4
    )
    completed = _fetch(data, high_watermark=6, next_offset=6)
    first = completed.take(1, 100, 5)
    assert [r.offset for r in first.records] == [1, 2]
    assert first.divergent_offset == 3 and not first.exhausted and first.consumed_to == 3 and first.leader_epoch == 5


def test_a_fetched_record_is_a_consumer_record_like_a_constructed_one() -> None:
    data = encode_batch([(b"k", b"v", [("h", b"1")], TS)], base_offset=9, partition_leader_epoch=2)
    (fetched,) = _fetch(data, fetch_offset=9, high_watermark=10, next_offset=10).take(9, 10, None).records
    built = ConsumerRecord("orders", 2, 9, TS, 0, b"k", b"v", [("h", b"1")], 2)
    assert isinstance(fetched, ConsumerRecord) and fetched == built and built == fetched
    assert fetched != ConsumerRecord("orders", 2, 9, TS, 0, b"k", b"other", [("h", b"1")], 2)
    assert (
        repr(fetched)
        == repr(built)
        == (
            "ConsumerRecord(topic='orders', partition=2, offset=9, timestamp=1700000000000, timestamp_type=0, "
            "key=b'k', value=b'v', headers=[('h', b'1')], leader_epoch=2)"
        )
    )
    assert pickle.loads(pickle.dumps(fetched)) == built
    match fetched:
        case ConsumerRecord(topic, partition, offset):
            assert (topic, partition, offset) == ("orders", 2, 9)
    with pytest.raises(AttributeError):
        fetched.value = b"changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(fetched)
    assert ConsumerRecord("t", 0, 1, TS, 0, None, None).headers == []


def test_a_first_read_overtaken_by_another_threads_decode_gets_its_columns() -> None:
    """Thread B finds the batch undecoded, thread A decodes it and drops its bytes, then B goes on."""
    header, view = checked_batch(memoryview(encode_batch([(b"k", b"v", (), TS)] * 3, base_offset=0)), 0)
    batch = LazyBatch(view, header)
    source, first_line = inspect.getsourcelines(LazyBatch.decode)
    pause_at = first_line + next(i for i, line in enumerate(source) if line.strip() == "view = self._view")
    paused, resume = threading.Event(), threading.Event()

    def trace(frame: FrameType, event: str, arg: object) -> TraceFunction | None:
        if frame.f_code is not LazyBatch.decode.__code__:
            return None

        def on_line(frame: FrameType, event: str, arg: object) -> TraceFunction:
            if event == "line" and frame.f_lineno == pause_at:
                paused.set()
                resume.wait(10)
            return on_line

        return on_line

    results: list[BatchColumns] = []

    def read() -> None:
        sys.settrace(trace)
        try:
            results.append(batch.decode())
        finally:
            sys.settrace(None)

    reader = threading.Thread(target=read)
    reader.start()
    assert paused.wait(10)
    decoded = batch.decode()
    resume.set()
    reader.join(10)
    assert results == [decoded] and results[0] is decoded and decoded.values == [b"v"] * 3
