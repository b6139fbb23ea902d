"""Transaction markers as batches: what a leader writes and what every reader decodes."""

from __future__ import annotations

import struct

import pytest

from broker.errors import CorruptRecord
from broker.record.codec import RecordInput, encode_batch
from broker.record.control import TransactionMarker, decode_marker, encode_marker_batch
from broker.record.header import read_header, validate_batch

NOW_MS = 1_700_000_000_000


@pytest.mark.parametrize("committed", [True, False])
def test_a_marker_round_trips_with_its_producer_and_coordinator_epoch(committed: bool) -> None:
    marker = TransactionMarker(producer_id=4001, producer_epoch=7, committed=committed, coordinator_epoch=12)
    batch = encode_marker_batch(marker, NOW_MS)
    header = validate_batch(batch)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.records_count) == (4001, 7, 1)
    assert decode_marker(batch, header) == marker


def test_the_record_layout_is_kafkas_control_record() -> None:
    """Key: version int16 0 and type int16 (1 = COMMIT); value: version int16 0 and the coordinator epoch."""
    batch = encode_marker_batch(TransactionMarker(9, 0, True, 5), NOW_MS)
    header = read_header(batch)
    assert batch.endswith(struct.pack(">hi", 0, 5) + b"\x00")  # value, then zero headers
    assert struct.pack(">hh", 0, 1) in batch[61:]
    assert header.max_timestamp == NOW_MS


def test_another_control_type_is_no_marker() -> None:
    """Kafka's KRaft leader-change record (type 2) is a control record, not the end of a transaction."""
    batch = encode_batch(
        [RecordInput(struct.pack(">hh", 0, 2), b"\x00\x00", (), NOW_MS)],
        producer_id=9,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    assert decode_marker(batch, read_header(batch)) is None


def test_a_damaged_marker_is_refused_not_misread() -> None:
    batch = bytearray(encode_marker_batch(TransactionMarker(9, 0, False, 1), NOW_MS))
    batch[-3] ^= 0xFF
    with pytest.raises(CorruptRecord, match="CRC"):
        decode_marker(batch, read_header(batch))
