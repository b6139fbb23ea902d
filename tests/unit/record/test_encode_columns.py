"""``encode_columns``: the producer's columnar encoder writes exactly Kafka's record batch v2."""

from __future__ import annotations

import random
import struct

import pytest

from broker.record.codec import RecordInput, encode_batch, encode_columns
from broker.record.compression import GZIP
from broker.record.decode import decode_batch
from broker.record.header import crc32c

BASE_TS = 1_700_000_000_000


def _random_columns(rng: random.Random) -> tuple[list, list, list | None, list | None]:
    count = rng.randint(1, 200)
    values = [
        None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 1, 63, 64, 100, 8191, 8192, 20_000]))
        for _ in range(count)
    ]
    keys = (
        [None if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 70)) for _ in range(count)]
        if rng.random() < 0.5
        else None
    )
    headers = (
        [
            [
                (f"h{j}", None if rng.random() < 0.2 else rng.randbytes(rng.randint(0, 200)))
                for j in range(rng.randint(0, 3))
            ]
            for _ in range(count)
        ]
        if rng.random() < 0.3
        else None
    )
    timestamps = [BASE_TS + rng.choice([0, 1, -7, 70_000, -(2**40), 10**12]) for _ in range(count)]
    return values, timestamps, keys, headers


def test_columns_encode_byte_for_byte_as_encode_batch_and_decode_back() -> None:
    rng = random.Random(20261125)
    for _ in range(300):
        values, timestamps, keys, headers = _random_columns(rng)
        records = [
            RecordInput(keys[i] if keys else None, values[i], headers[i] if headers else [], timestamps[i])
            for i in range(len(values))
        ]
        transactional = rng.random() < 0.5
        expected = encode_batch(
            records, producer_id=9, producer_epoch=3, base_sequence=2**31 - 2, is_transactional=transactional
        )
        encoded = encode_columns(
            values,
            timestamps,
            keys=keys,
            headers=headers,
            producer_id=9,
            producer_epoch=3,
            base_sequence=2**31 - 2,
            is_transactional=transactional,
        )
        assert encoded == expected
        header, decoded = decode_batch(encoded)
        assert header.records_count == len(values) and header.base_sequence == 2**31 - 2
        assert header.is_transactional is transactional
        assert [r.value for r in decoded] == values
        assert [r.key for r in decoded] == (keys or [None] * len(values))
        assert [r.headers for r in decoded] == (headers or [[]] * len(values))
        assert [r.timestamp for r in decoded] == timestamps


def test_one_record_is_laid_out_as_kafkas_record_batch_v2() -> None:
    value = b"v" * 300
    encoded = encode_columns([value], [BASE_TS], keys=[b"k"], producer_id=7, producer_epoch=1, base_sequence=5)
    # record: length, attributes, timestamp delta 0, offset delta 0, key length 1 (zigzag 2), key,
    # value length 300 (zigzag 600 = 0xd8 0x04), value, no headers
    record_body = b"\x00" + b"\x00" + b"\x00" + b"\x02k" + b"\xd8\x04" + value + b"\x00"
    record = bytes([(len(record_body) << 1) & 0x7F | 0x80, (len(record_body) << 1) >> 7]) + record_body
    covered = struct.pack(">hiqqqhii", 0, 0, BASE_TS, BASE_TS, 7, 1, 5, 1) + record
    prefix = struct.pack(">qiibI", 0, len(covered) + 9, -1, 2, crc32c(covered))
    assert encoded == prefix + covered


def test_the_checksum_is_crc32c_castagnoli() -> None:
    assert crc32c(b"123456789") == 0xE3069283, "the CRC-32C check value; CRC-32 (zlib) would give 0xCBF43926"


def test_compressed_columns_set_the_codec_bits_and_decode() -> None:
    values = [b"abc" * 100] * 50
    encoded = encode_columns(values, [BASE_TS] * 50, compression=GZIP)
    header, decoded = decode_batch(encoded)
    assert header.attributes & 0x07 == GZIP
    assert [r.value for r in decoded] == values
    assert len(encoded) < len(encode_columns(values, [BASE_TS] * 50))


def test_an_empty_batch_or_a_non_bytes_value_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        encode_columns([], [])
    with pytest.raises(TypeError, match="must be bytes"):
        encode_columns(["text"], [BASE_TS])  # type: ignore[list-item]
