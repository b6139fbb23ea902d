"""The record batch v2 codec: golden bytes, round trips, and corruption refused clearly."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record._crc32c import crc as independent_crc32c  # type: ignore[import-untyped]

from broker.errors import CorruptRecord
from broker.record.codec import LOG_APPEND_TIME, Record, RecordInput, encode_batch, record_size_in_bytes
from broker.record.compression import GZIP, LZ4, NONE, SUPPORTED_CODECS, ZSTD
from broker.record.decode import decode_batch, decode_columns, iter_batches_with_records, iter_records
from broker.record.header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    MAGIC_OFFSET,
    RECORDS_COUNT_OFFSET,
    RECORDS_OFFSET,
    stamp,
    validate_batch,
)

TIMESTAMP_MS = 1_700_000_000_000

GOLDEN_ONE_RECORD_BATCH = bytes.fromhex(
    "0000000000000000"  # base_offset 0
    "0000003a"  # batch_length 58 = 49 header bytes after the length field + 9 record bytes
    "ffffffff"  # partition_leader_epoch -1
    "02"  # magic
    "e99b8dd8"  # CRC-32C of attributes .. end
    "0000"  # attributes: no compression, CreateTime, not transactional
    "00000000"  # last_offset_delta
    "0000018bcfe56800"  # base_timestamp 1_700_000_000_000
    "0000018bcfe56800"  # max_timestamp
    "ffffffffffffffff"  # producer_id -1
    "ffff"  # producer_epoch -1
    "ffffffff"  # base_sequence -1
    "00000001"  # records_count
    "10"  # record length 8 (zigzag)
    "00"  # record attributes
    "00"  # timestamp_delta 0
    "00"  # offset_delta 0
    "02"
    "6b"  # key length 1, b"k"
    "02"
    "76"  # value length 1, b"v"
    "00"  # no headers
)

headers_strategy = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)), max_size=3)
record_strategy = st.builds(
    RecordInput,
    key=st.none() | st.binary(max_size=64),
    value=st.none() | st.binary(max_size=300),
    headers=headers_strategy,
    timestamp=st.integers(0, 1 << 45),
)


def test_golden_batch_bytes() -> None:
    assert encode_batch([(b"k", b"v", (), TIMESTAMP_MS)]) == GOLDEN_ONE_RECORD_BATCH


def test_golden_batch_header_field_by_field() -> None:
    batch = encode_batch([(b"k", b"v", (), TIMESTAMP_MS)], base_offset=7, partition_leader_epoch=3)
    fields = struct.unpack_from(">qiibIhiqqqhii", batch)
    assert fields == (7, len(batch) - 12, 3, 2, fields[4], 0, 0, TIMESTAMP_MS, TIMESTAMP_MS, -1, -1, -1, 1)
    assert fields[4] == independent_crc32c(batch[ATTRIBUTES_OFFSET:])
    assert batch[RECORDS_OFFSET:] == bytes.fromhex("1000000002 6b 0276 00".replace(" ", ""))


def test_golden_crc_matches_an_independent_crc32c() -> None:
    stored = struct.unpack_from(">I", GOLDEN_ONE_RECORD_BATCH, CRC_OFFSET)[0]
    assert stored == independent_crc32c(GOLDEN_ONE_RECORD_BATCH[ATTRIBUTES_OFFSET:])


def test_golden_batch_decodes() -> None:
    header, records = decode_batch(GOLDEN_ONE_RECORD_BATCH)
    assert header.base_offset == 0 and header.records_count == 1 and header.size == len(GOLDEN_ONE_RECORD_BATCH)
    assert records == [Record(offset=0, timestamp=TIMESTAMP_MS, key=b"k", value=b"v", headers=[], leader_epoch=-1)]


def test_header_fields_reflect_encode_arguments() -> None:
    batch = encode_batch(
        [(None, b"a", (), TIMESTAMP_MS + 5), (b"b", None, (), TIMESTAMP_MS + 2), (b"c", b"c", (), TIMESTAMP_MS - 1)],
        base_offset=100,
        compression=ZSTD,
        producer_id=42,
        producer_epoch=3,
        base_sequence=17,
        partition_leader_epoch=9,
        is_transactional=True,
    )
    header = validate_batch(batch)
    assert (header.base_offset, header.last_offset, header.records_count) == (100, 102, 3)
    assert (header.base_timestamp, header.max_timestamp) == (TIMESTAMP_MS + 5, TIMESTAMP_MS + 5)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 17)
    assert header.last_sequence == 19
    assert header.partition_leader_epoch == 9
    assert header.compression == ZSTD and header.is_transactional and header.timestamp_type == 0


def test_explicit_base_timestamp_makes_deltas_relative_to_it() -> None:
    batch = encode_batch([(b"k", b"v", (), TIMESTAMP_MS)], base_timestamp=TIMESTAMP_MS - 1000)
    header, records = decode_batch(batch)
    assert header.base_timestamp == TIMESTAMP_MS - 1000
    assert records[0].timestamp == TIMESTAMP_MS
    assert batch[RECORDS_OFFSET + 2 : RECORDS_OFFSET + 4] == bytes.fromhex("d00f")  # zigzag varlong 1000


def test_log_append_time_gives_every_record_the_max_timestamp() -> None:
    batch = encode_batch(
        [(b"a", b"1", (), TIMESTAMP_MS), (b"b", b"2", (), TIMESTAMP_MS + 9)], timestamp_type=LOG_APPEND_TIME
    )
    header, records = decode_batch(batch)
    assert header.timestamp_type == LOG_APPEND_TIME
    assert [record.timestamp for record in records] == [TIMESTAMP_MS + 9] * 2


def test_missing_timestamps_are_now() -> None:
    header, records = decode_batch(encode_batch([(b"k", b"v"), RecordInput(None, b"w")]))
    assert header.base_timestamp == records[0].timestamp == records[1].timestamp > TIMESTAMP_MS


def test_records_and_tuples_and_record_inputs_are_all_accepted() -> None:
    existing = Record(offset=55, timestamp=TIMESTAMP_MS, key=b"k", value=b"v", headers=[("h", b"1")])
    batch = encode_batch([existing, (b"t", b"u"), RecordInput(b"r", None, [("n", None)], TIMESTAMP_MS)])
    _, records = decode_batch(batch)
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (0, b"k", b"v", [("h", b"1")]),
        (1, b"t", b"u", []),
        (2, b"r", None, [("n", None)]),
    ]


def test_large_values_and_many_records_use_multi_byte_varints() -> None:
    records = [
        RecordInput(b"k" * 300, bytes(70_000), [("h" * 200, b"x" * 9000)], TIMESTAMP_MS + i * 100_000)
        for i in range(300)
    ]
    _, decoded = decode_batch(encode_batch(records, compression=LZ4))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in decoded] == [(*r[:3], r.timestamp) for r in records]
    assert decoded[-1].offset == 299


def test_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_batch([])


def test_non_bytes_values_are_refused_clearly() -> None:
    with pytest.raises(TypeError, match="must be bytes or None"):
        encode_batch([(b"k", "a string")])
    with pytest.raises(TypeError, match="header keys str"):
        encode_batch([(b"k", b"v", [(b"bytes-key", b"v")])])


def test_unknown_timestamp_type_is_refused() -> None:
    with pytest.raises(ValueError, match="timestamp_type must be 0"):
        encode_batch([(b"k", b"v")], timestamp_type=2)


def test_unsupported_compression_is_refused_when_encoding() -> None:
    with pytest.raises(ValueError, match="snappy"):
        encode_batch([(b"k", b"v")], compression=2)


def _timestamp(record: RecordInput) -> int:
    """The records these tests build always carry a timestamp (``None`` would mean "now at encode time")."""
    assert record.timestamp is not None
    return record.timestamp


@settings(max_examples=60, deadline=None)
@given(
    records=st.lists(record_strategy, min_size=1, max_size=20),
    codec=st.sampled_from(SUPPORTED_CODECS),
    base_offset=st.integers(0, 1 << 40),
    leader_epoch=st.integers(-1, 1 << 20),
)
def test_round_trip(records: list[RecordInput], codec: int, base_offset: int, leader_epoch: int) -> None:
    batch = encode_batch(records, compression=codec, base_offset=base_offset, partition_leader_epoch=leader_epoch)
    header, decoded = decode_batch(batch)
    assert header.compression == codec
    assert header.max_timestamp == max(_timestamp(r) for r in records)
    expected = [
        Record(base_offset + i, _timestamp(r), r.key, r.value, list(r.headers), leader_epoch)
        for i, r in enumerate(records)
    ]
    assert decoded == expected
    columns = decode_columns(batch)
    assert columns.offsets == [r.offset for r in expected]
    assert columns.timestamps == [r.timestamp for r in expected]
    assert columns.keys == [r.key for r in expected]
    assert columns.values == [r.value for r in expected]
    assert columns.headers == [r.headers for r in expected]


def _sized(records: list[RecordInput]) -> int:
    base_timestamp = records[0].timestamp
    assert base_timestamp is not None
    return RECORDS_OFFSET + sum(
        record_size_in_bytes(r, delta, _timestamp(r) - base_timestamp) for delta, r in enumerate(records)
    )


@settings(max_examples=60, deadline=None)
@given(records=st.lists(record_strategy, min_size=1, max_size=20))
def test_record_sizes_add_up_to_the_encoded_batch(records: list[RecordInput]) -> None:
    assert _sized(records) == len(encode_batch(records))


def test_record_sizes_cover_multi_byte_deltas_and_lengths() -> None:
    """Offset deltas past 63, timestamps before the base and values past 63 bytes take several varint bytes."""
    records = [
        RecordInput(
            None if i % 7 == 0 else b"k" * i,
            b"v" * (i * 13),
            [("h", None)] if i % 5 == 0 else [],
            TIMESTAMP_MS + (i - 100) * 10_000,
        )
        for i in range(300)
    ]
    records[0] = records[0]._replace(timestamp=TIMESTAMP_MS)
    assert _sized(records) == len(encode_batch(records))


def test_back_to_back_batches_decode_in_order() -> None:
    first = encode_batch([(b"a", b"1"), (b"b", b"2")], base_offset=0, compression=GZIP)
    second = encode_batch([(b"c", b"3")], base_offset=2)
    buffer = bytearray(first + second)
    assert [r.offset for r in iter_records(buffer)] == [0, 1, 2]
    assert [r.value for r in iter_records(memoryview(buffer))] == [b"1", b"2", b"3"]
    assert decode_columns(buffer).keys == [b"a", b"b", b"c"]
    assert [header.position for header, _ in iter_batches_with_records(buffer)] == [0, len(first)]


def test_decode_at_a_position() -> None:
    first = encode_batch([(b"a", b"1")])
    second = encode_batch([(b"b", b"2")], base_offset=1)
    header, records = decode_batch(first + second, len(first))
    assert header.position == len(first) and records[0].value == b"2"


@pytest.mark.parametrize("codec", SUPPORTED_CODECS)
def test_validate_batch_accepts_our_batches_and_stamp_keeps_the_crc_valid(codec: int) -> None:
    batch = bytearray(encode_batch([(b"k", b"v" * 50)] * 5, compression=codec))
    assert validate_batch(batch).records_count == 5
    stamp(batch, 0, base_offset=1234, partition_leader_epoch=77)
    header, records = decode_batch(batch)
    assert (header.base_offset, header.partition_leader_epoch) == (1234, 77)
    assert [r.offset for r in records] == [1234, 1235, 1236, 1237, 1238]
    assert {r.leader_epoch for r in records} == {77}


@pytest.mark.parametrize("byte_index", [ATTRIBUTES_OFFSET, RECORDS_COUNT_OFFSET + 3, RECORDS_OFFSET + 4, -1])
def test_any_flipped_byte_under_the_crc_is_refused(byte_index: int) -> None:
    batch = bytearray(GOLDEN_ONE_RECORD_BATCH)
    batch[byte_index] ^= 0x01
    with pytest.raises(CorruptRecord, match="failed its CRC-32C check"):
        decode_batch(batch)


def test_corrupt_crc_is_refused() -> None:
    batch = bytearray(GOLDEN_ONE_RECORD_BATCH)
    batch[CRC_OFFSET] ^= 0xFF
    with pytest.raises(CorruptRecord, match=r"stored 0x169b8dd8, computed 0xe99b8dd8"):
        list(iter_records(batch))


@pytest.mark.parametrize("codec", [NONE, GZIP])
def test_every_truncation_of_a_small_batch_is_refused(codec: int) -> None:
    batch = encode_batch([(b"key", b"value", [("h", b"x")], TIMESTAMP_MS), (None, b"v2")], compression=codec)
    for length in range(1, len(batch)):
        with pytest.raises(CorruptRecord, match="truncated record batch"):
            decode_batch(batch[:length])
        with pytest.raises(CorruptRecord, match="truncated record batch"):
            decode_columns(batch + batch[:length])


def test_wrong_magic_is_refused() -> None:
    batch = bytearray(GOLDEN_ONE_RECORD_BATCH)
    batch[MAGIC_OFFSET] = 1
    with pytest.raises(CorruptRecord, match="unsupported record batch magic 1"):
        decode_batch(batch)
