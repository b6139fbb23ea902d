"""Zigzag varints against the vectors of Kafka's ``ByteUtilsTest`` and by round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.errors import CorruptRecord
from broker.record.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
)

KAFKA_VARINT_VECTORS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (-65, "8101"),
    (8191, "fe7f"),
    (-8192, "ff7f"),
    (8192, "808001"),
    (-8193, "818001"),
    (1048575, "feff7f"),
    (-1048576, "ffff7f"),
    (1048576, "80808001"),
    (-1048577, "81808001"),
    (134217727, "feffff7f"),
    (-134217728, "ffffff7f"),
    (134217728, "8080808001"),
    (-134217729, "8180808001"),
    (INT32_MAX, "feffffff0f"),
    (INT32_MIN, "ffffffff0f"),
]


@pytest.mark.parametrize(("value", "encoded_hex"), KAFKA_VARINT_VECTORS)
def test_varint_matches_kafka_byte_utils(value: int, encoded_hex: str) -> None:
    encoded = bytes.fromhex(encoded_hex)
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))
    assert size_of_varint(value) == len(encoded)


@pytest.mark.parametrize(("value", "encoded_hex"), KAFKA_VARINT_VECTORS)
def test_varlong_agrees_with_varint_on_the_int32_range(value: int, encoded_hex: str) -> None:
    assert encode_varlong(value) == bytes.fromhex(encoded_hex)


@pytest.mark.parametrize(
    ("value", "encoded_hex"),
    [(INT64_MAX, "feffffffffffffffff01"), (INT64_MIN, "ffffffffffffffffff01"), (1 << 40, "808080808040")],
)
def test_varlong_extremes_match_kafka(value: int, encoded_hex: str) -> None:
    encoded = bytes.fromhex(encoded_hex)
    assert encode_varlong(value) == encoded
    assert decode_varlong(encoded, 0) == (value, len(encoded))
    assert size_of_varlong(value) == len(encoded)


@given(st.integers(INT32_MIN, INT32_MAX), st.binary(max_size=4))
def test_varint_round_trips_at_any_position(value: int, prefix: bytes) -> None:
    buf = prefix + encode_varint(value) + b"\xff"
    assert decode_varint(buf, len(prefix)) == (value, len(buf) - 1)


@given(st.integers(INT64_MIN, INT64_MAX))
def test_varlong_round_trips(value: int) -> None:
    encoded = encode_varlong(value)
    assert decode_varlong(encoded, 0) == (value, len(encoded))
    assert size_of_varlong(value) == len(encoded)


@given(st.integers(0, (1 << 32) - 1))
def test_unsigned_varint_round_trips(value: int) -> None:
    encoded = encode_unsigned_varint(value)
    assert decode_unsigned_varint(encoded, 0) == (value, len(encoded))


def test_varint_longer_than_five_bytes_is_corrupt() -> None:
    with pytest.raises(CorruptRecord, match="bad varint at byte 0: longer than 5 bytes"):
        decode_varint(bytes.fromhex("ffffffffff01"), 0)


def test_varlong_longer_than_ten_bytes_is_corrupt() -> None:
    with pytest.raises(CorruptRecord, match="longer than 10 bytes"):
        decode_varlong(b"\xff" * 10 + b"\x01", 0)


def test_five_byte_varint_beyond_32_bits_is_corrupt() -> None:
    with pytest.raises(CorruptRecord, match="does not fit in 32 bits"):
        decode_varint(bytes.fromhex("ffffffff7f"), 0)


def test_truncated_varint_is_corrupt() -> None:
    with pytest.raises(CorruptRecord, match="truncated varint at byte 1"):
        decode_varint(b"\x00\x80\x80", 1)


@pytest.mark.parametrize("value", [INT32_MAX + 1, INT32_MIN - 1])
def test_varint_refuses_values_outside_int32(value: int) -> None:
    with pytest.raises(ValueError, match="int32"):
        encode_varint(value)


def test_varlong_refuses_values_outside_int64() -> None:
    with pytest.raises(ValueError, match="int64"):
        encode_varlong(INT64_MAX + 1)


def test_unsigned_varint_refuses_negative_values() -> None:
    with pytest.raises(ValueError, match="unsigned"):
        encode_unsigned_varint(-1)
