"""Batches whose CRC is valid but whose records are malformed: each is refused by name.

A producer computes the CRC over whatever it wrote, so a buggy or hostile client can
send a batch that passes ``validate_batch`` and still lies about its records. These
batches are built by hand (header packed here, CRC from an independent CRC-32C).
"""

from __future__ import annotations

import struct

import pytest
from kafka.record._crc32c import crc as independent_crc32c  # type: ignore[import-untyped]

from broker.errors import CorruptRecord
from broker.record.compression import GZIP, NONE, ZSTD
from broker.record.decode import decode_batch, decode_columns, validate_produced_batches

ONE_RECORD = bytes.fromhex("10 00 00 00 02 6b 02 76 00".replace(" ", ""))
"""length 8, attributes, timestamp delta 0, offset delta 0, key b"k", value b"v", no headers."""


def batch_with_records_section(section: bytes, records_count: int, compression: int = NONE) -> bytes:
    covered = (
        struct.pack(">hiqqqhii", compression, max(records_count - 1, 0), 0, 0, -1, -1, -1, records_count) + section
    )
    return struct.pack(">qiibI", 0, 9 + len(covered), 0, 2, independent_crc32c(covered)) + covered


def test_hand_built_batch_decodes() -> None:
    _, records = decode_batch(batch_with_records_section(ONE_RECORD * 2, 2))
    assert [(r.key, r.value) for r in records] == [(b"k", b"v")] * 2


def test_a_produced_batch_whose_offset_deltas_are_not_0_to_n_minus_1_is_refused() -> None:
    """Kafka's rule for a producer's batch; readers split batches at any offset from the header alone."""
    two_at_delta_0 = batch_with_records_section(ONE_RECORD * 2, 2)
    with pytest.raises(CorruptRecord, match=r"offset deltas are not 0, 1, \.\.\. 1 in order"):
        validate_produced_batches(two_at_delta_0)
    second_at_delta_1 = ONE_RECORD[:3] + b"\x02" + ONE_RECORD[4:]
    validate_produced_batches(batch_with_records_section(ONE_RECORD + second_at_delta_1, 2))


def test_fewer_records_than_the_count_is_refused() -> None:
    with pytest.raises(CorruptRecord, match="declares 3 records but its records section holds only 2"):
        decode_batch(batch_with_records_section(ONE_RECORD * 2, 3))


def test_bytes_after_the_last_counted_record_are_refused() -> None:
    with pytest.raises(CorruptRecord, match=f"declares 1 records but {len(ONE_RECORD)} bytes follow"):
        decode_columns(batch_with_records_section(ONE_RECORD * 2, 1))


def test_record_length_disagreeing_with_its_fields_is_refused() -> None:
    wrong_length = b"\x12" + ONE_RECORD[1:] + b"\x00"
    with pytest.raises(CorruptRecord, match="record 0 declares 9 bytes but its fields take 8"):
        decode_batch(batch_with_records_section(wrong_length, 1))


def test_bad_varint_is_refused() -> None:
    six_byte_key_length = bytes.fromhex("20 00 00 00 ff ff ff ff ff 01".replace(" ", "")) + b"k" * 20
    with pytest.raises(CorruptRecord, match="bad varint"):
        decode_batch(batch_with_records_section(six_byte_key_length, 1))


def test_key_length_below_minus_one_is_refused() -> None:
    negative_key = bytes.fromhex("0c 00 00 00 03 02 76 00".replace(" ", ""))
    with pytest.raises(CorruptRecord, match="a record key has length -2"):
        decode_batch(batch_with_records_section(negative_key, 1))


def test_value_running_past_the_section_is_refused() -> None:
    long_value = bytes.fromhex("10 00 00 00 02 6b 7e 76 00".replace(" ", ""))
    with pytest.raises(CorruptRecord, match="runs past the end of the records section"):
        decode_batch(batch_with_records_section(long_value, 1))


def test_negative_header_count_is_refused() -> None:
    negative_headers = bytes.fromhex("10 00 00 00 02 6b 02 76 01".replace(" ", ""))
    with pytest.raises(CorruptRecord, match="a record has -1 headers"):
        decode_batch(batch_with_records_section(negative_headers, 1))


def test_header_key_that_is_not_utf8_is_refused() -> None:
    bad_header = bytes.fromhex("16 00 00 00 02 6b 02 76 02 02 ff 02 78".replace(" ", ""))
    with pytest.raises(CorruptRecord, match="header key is not UTF-8"):
        decode_batch(batch_with_records_section(bad_header, 1))


@pytest.mark.parametrize("codec", [GZIP, ZSTD])
def test_compressed_garbage_under_a_valid_crc_is_refused(codec: int) -> None:
    with pytest.raises(CorruptRecord, match="cannot decompress"):
        decode_batch(batch_with_records_section(ONE_RECORD, 1, compression=codec))


def test_snappy_batch_is_refused_by_name() -> None:
    with pytest.raises(CorruptRecord, match="snappy"):
        decode_batch(batch_with_records_section(ONE_RECORD, 1, compression=2))
