"""The raw load's pre-encoded batch: what the broker decodes from it, and a CRC that holds."""

from __future__ import annotations

import crc32c
import pytest

from broker.bench.raw_load import raw_batch
from broker.bench.spec import STAMP
from broker.errors import CorruptRecord
from broker.record.codec import CREATE_TIME
from broker.record.compression import GZIP, NONE
from broker.record.decode import decode_batch
from broker.record.header import NO_PRODUCER_ID, NO_SEQUENCE, TIMESTAMP_TYPE_MASK

CRC_OFFSET = 17
"""Base offset (8), batch length (4), partition leader epoch (4), magic (1): then the CRC, over the rest."""


def test_raw_batch_decodes_to_the_records_asked_for_non_idempotent_and_create_time() -> None:
    header, records = decode_batch(raw_batch(100, 1000))
    assert header.records_count == len(records) == 1000
    assert [record.offset for record in records] == list(range(1000)), "offsets 0..n-1: the leader assigns its own"
    assert header.base_offset == 0
    assert header.producer_id == NO_PRODUCER_ID and header.base_sequence == NO_SEQUENCE
    assert header.attributes & TIMESTAMP_TYPE_MASK == CREATE_TIME and header.attributes & 0b111 == NONE
    assert all(record.key is None and record.headers == [] for record in records)
    assert {record.value for record in records} == {STAMP.pack(0, 0) + b"v" * 91}, "100 bytes, stamp flag 0"


def test_raw_batch_crc_covers_attributes_to_the_end_and_a_flipped_byte_is_refused() -> None:
    batch = raw_batch(20, 3)
    assert int.from_bytes(batch[CRC_OFFSET : CRC_OFFSET + 4], "big") == crc32c.crc32c(batch[CRC_OFFSET + 4 :])
    corrupted = bytearray(batch)
    corrupted[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        decode_batch(bytes(corrupted))


def test_raw_batch_is_compressed_with_the_codec_named() -> None:
    header, records = decode_batch(raw_batch(100, 50, "gzip"))
    assert header.attributes & 0b111 == GZIP
    assert len(records) == 50 and all(len(record.value or b"") == 100 for record in records)
