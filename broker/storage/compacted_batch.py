"""Building record batches that keep the offsets of the records they hold (for the log cleaner).

A compacted batch spans a range of offsets ``[base_offset, base_offset + last_offset_delta]``
whose records are only partly present: each kept record carries its original offset
delta and timestamp. The span always covers whole source batches, so batch ranges stay
contiguous along the segment (what recovery and followers check) even where every
record of the span was removed (an empty batch, as Kafka keeps for the same reason).
Written uncompressed; the CRC-32C covers everything from the attributes on, as always.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from broker.record.codec import Record
from broker.record.header import ATTRIBUTES_OFFSET, MAGIC, PARTITION_LEADER_EPOCH_OFFSET, crc32c
from broker.record.varint import encode_varint, encode_varlong

_PREFIX = struct.Struct(">qiibI")
_COVERED_HEADER = struct.Struct(">hiqqqhii")
_LENGTH_BEFORE_COVERED = ATTRIBUTES_OFFSET - PARTITION_LEADER_EPOCH_OFFSET
_NULL = encode_varint(-1)


@dataclass(frozen=True, slots=True)
class BatchSpan:
    """What a compacted batch keeps of its source batches' headers."""

    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    attributes: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int


def _bytes_field(value: bytes | None) -> bytes:
    return _NULL if value is None else encode_varint(len(value)) + value


def _encode_record(record: Record, base_offset: int, base_timestamp: int) -> bytes:
    headers = [encode_varint(len(record.headers))]
    for key, value in record.headers:
        encoded_key = key.encode("utf-8")
        headers.append(encode_varint(len(encoded_key)) + encoded_key + _bytes_field(value))
    body = b"".join(
        (
            b"\x00",
            encode_varlong(record.timestamp - base_timestamp),
            encode_varint(record.offset - base_offset),
            _bytes_field(record.key),
            _bytes_field(record.value),
            *headers,
        )
    )
    return encode_varint(len(body)) + body


def encode_span(span: BatchSpan, records: Sequence[Record]) -> bytes:
    """One batch over ``span`` holding ``records`` (a subset of its offsets, in order), uncompressed."""
    base_timestamp = min((r.timestamp for r in records), default=span.max_timestamp)
    payload = b"".join(_encode_record(r, span.base_offset, base_timestamp) for r in records)
    covered = (
        _COVERED_HEADER.pack(
            span.attributes & ~0x07,
            span.last_offset - span.base_offset,
            base_timestamp,
            span.max_timestamp,
            span.producer_id,
            span.producer_epoch,
            span.base_sequence,
            len(records),
        )
        + payload
    )
    prefix = _PREFIX.pack(
        span.base_offset, _LENGTH_BEFORE_COVERED + len(covered), span.partition_leader_epoch, MAGIC, crc32c(covered)
    )
    return prefix + covered
