"""Records of Apache Kafka's record batch v2 (magic 2): the layout, and encoding byte for byte.

The broker itself never parses records (see ``broker.record.header``); this module and
``broker.record.decode`` (reading) are for the edges: the JSON produce and read paths,
the producer and consumer clients and the Spark source. A record inside a batch is::

    length          varint   bytes of the record after this field
    attributes      int8     unused in magic 2, written as 0
    timestamp_delta varlong  timestamp - batch base_timestamp
    offset_delta    varint   offset - batch base_offset
    key_length      varint   -1 for a null key
    key             bytes
    value_length    varint   -1 for a null value
    value           bytes
    header_count    varint
    headers         [key_length varint, key utf-8, value_length varint (-1 = null), value]

The records section (everything after the 61-byte header) is compressed as one unit
when the batch's codec is not ``NONE``. The CRC-32C covers attributes .. end of batch,
so it is computed over the *compressed* bytes.

Invariants of an encoded batch: ``records_count == last_offset_delta + 1`` (offset
deltas are 0, 1, 2 ...), ``max_timestamp`` is the largest record timestamp, and
``batch_length`` counts the bytes after the length field.

Speed: encoding looks the varints of small lengths up in a table and joins all
records' pieces once (``encode_columns`` writes a whole batch of values in one pass).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from crc32c import crc32c as _crc32c_continue

from broker.clock import wall_clock_ms
from broker.record.compression import NONE, compress
from broker.record.header import (
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    PARTITION_LEADER_EPOCH_OFFSET,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    crc32c,
)
from broker.record.varint import (
    UNSIGNED_VARINT_CACHE,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
)

CREATE_TIME = 0
LOG_APPEND_TIME = 1

HeaderList = list[tuple[str, bytes | None]]
Buffer = bytes | bytearray | memoryview

_PREFIX = struct.Struct(">qiibI")
"""base_offset, batch_length, partition_leader_epoch, magic, crc: the bytes before the CRC'd part."""
_CRC_COVERED_HEADER = struct.Struct(">hiqqqhii")
"""attributes, last_offset_delta, base/max timestamp, producer id/epoch, base_sequence, records_count."""
_LENGTH_BEFORE_CRC_COVERED = ATTRIBUTES_OFFSET - PARTITION_LEADER_EPOCH_OFFSET
"""batch_length counts partition_leader_epoch, magic and crc before the CRC'd part."""

_VARINT_CACHE = UNSIGNED_VARINT_CACHE
_VARINT_CACHE_LIMIT = len(_VARINT_CACHE)
_LENGTH_CACHE_LIMIT = _VARINT_CACHE_LIMIT >> 1
"""Non-negative lengths below this zigzag to a cached encoding (``length << 1``)."""
_NULL_LENGTH = b"\x01"
_NO_HEADERS = b"\x00"
_RECORD_ATTRIBUTES = b"\x00"
_NULL_KEY_NULL_VALUE_NO_HEADERS = _NULL_LENGTH + _NULL_LENGTH + _NO_HEADERS


class RecordInput(NamedTuple):
    """A record to encode; plain tuples ``(key, value[, headers[, timestamp]])`` work too.

    ``timestamp`` is milliseconds since the epoch; ``None`` means "now" at encode time.
    """

    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


@dataclass(slots=True)
class Record:
    """One decoded record; ``timestamp`` is milliseconds since the epoch.

    ``leader_epoch`` is the partition leader epoch of the batch that holds the record,
    which a consumer sends back to detect log truncation.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: HeaderList = field(default_factory=list)
    leader_epoch: int = NO_PARTITION_LEADER_EPOCH


class RecordColumns(NamedTuple):
    """Records as parallel lists, the shape Arrow and JSON writers want, without ``Record`` objects."""

    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[HeaderList]


def encode_batch(
    records: Sequence[RecordInput | Record | tuple[Any, ...]],
    *,
    base_offset: int = 0,
    compression: int = NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp_type: int = CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    base_timestamp: int | None = None,
) -> bytes:
    """Encode ``records`` as one complete batch with offset deltas 0 .. len(records) - 1.

    ``base_timestamp`` defaults to the first record's timestamp (or now, if it has none),
    as Kafka's producer does; record timestamps are written as deltas from it.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime), got {timestamp_type}")
    now_ms = wall_clock_ms()
    if base_timestamp is None:
        base_timestamp = _timestamp_of(records[0], now_ms)
    try:
        body, max_timestamp = _encode_records(records, base_timestamp, now_ms)
    except (TypeError, AttributeError) as error:
        raise TypeError(f"record keys and values must be bytes or None, header keys str: {error}") from error
    payload = compress(compression, body) if compression != NONE else body
    attributes = compression
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    count = len(records)
    covered = b"".join(
        (
            _CRC_COVERED_HEADER.pack(
                attributes,
                count - 1,
                base_timestamp,
                max_timestamp,
                producer_id,
                producer_epoch,
                base_sequence,
                count,
            ),
            payload,
        )
    )
    batch_length = _LENGTH_BEFORE_CRC_COVERED + len(covered)
    prefix = _PREFIX.pack(base_offset, batch_length, partition_leader_epoch, MAGIC, crc32c(covered))
    return prefix + covered


def encode_columns(
    values: Sequence[bytes | None],
    timestamps: Sequence[int],
    *,
    keys: Sequence[bytes | None] | None = None,
    headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None,
    compression: int = NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
) -> bytes:
    """The producer's encoder: records given as columns, byte for byte what ``encode_batch`` writes.

    ``values[i]``, ``timestamps[i]`` (and ``keys[i]``, ``headers[i]`` when those columns
    are given; ``None`` means every key is null, every header list empty) are record
    ``i``. No per-record object is built: the loop appends each record's pieces to one
    list, joined once; the CRC-32C runs once over the whole batch. The base timestamp is
    the first record's, as ``encode_batch`` chooses it.
    """
    count = len(values)
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    base_timestamp = timestamps[0]
    try:
        if keys is None and headers is None:
            body = _encode_plain_values(values, timestamps, base_timestamp)
        else:
            body = _encode_value_columns(values, timestamps, keys, headers, base_timestamp)
    except (TypeError, AttributeError) as error:
        raise TypeError(f"record keys and values must be bytes or None, header keys str: {error}") from error
    payload = compress(compression, body) if compression != NONE else body
    covered = _CRC_COVERED_HEADER.pack(
        compression | TRANSACTIONAL_MASK if is_transactional else compression,
        count - 1,
        base_timestamp,
        max(timestamps),
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    crc = _crc32c_continue(payload, crc32c(covered))
    batch_length = _LENGTH_BEFORE_CRC_COVERED + len(covered) + len(payload)
    return b"".join((_PREFIX.pack(0, batch_length, NO_PARTITION_LEADER_EPOCH, MAGIC, crc), covered, payload))


def _encode_plain_values(values: Sequence[bytes | None], timestamps: Sequence[int], base_timestamp: int) -> bytes:
    """``_encode_value_columns`` for records without keys and headers (most produced records): the same
    bytes with fewer branches and pieces per record; attributes and timestamp delta are one piece."""
    parts: list[Any] = []
    extend = parts.extend
    cache = _VARINT_CACHE
    cache_limit = _VARINT_CACHE_LIMIT
    length_limit = _LENGTH_CACHE_LIMIT
    last_timestamp: int | None = None
    head = b""
    fixed = 0
    for offset_delta, value in enumerate(values):
        timestamp = timestamps[offset_delta]
        if timestamp != last_timestamp:
            last_timestamp = timestamp
            delta = timestamp - base_timestamp
            zigzag = (delta << 1) ^ (delta >> 63)
            head = _RECORD_ATTRIBUTES + (cache[zigzag] if 0 <= zigzag < cache_limit else encode_varlong(delta))
            fixed = len(head) + 2  # + null key length + header count
        offset_bytes = cache[offset_delta << 1] if offset_delta < length_limit else encode_varint(offset_delta)
        if value is None:
            body_length = fixed + len(offset_bytes) + 1
            extend(
                (
                    cache[body_length << 1] if body_length < length_limit else encode_varint(body_length),
                    head,
                    offset_bytes,
                    _NULL_KEY_NULL_VALUE_NO_HEADERS,
                )
            )
            continue
        value_length = len(value)
        value_length_bytes = cache[value_length << 1] if value_length < length_limit else encode_varint(value_length)
        body_length = fixed + len(offset_bytes) + len(value_length_bytes) + value_length
        extend(
            (
                cache[body_length << 1] if body_length < length_limit else encode_varint(body_length),
                head,
                offset_bytes,
                _NULL_LENGTH,
                value_length_bytes,
                value,
                _NO_HEADERS,
            )
        )
    return b"".join(parts)


def _encode_value_columns(
    values: Sequence[bytes | None],
    timestamps: Sequence[int],
    keys: Sequence[bytes | None] | None,
    headers: Sequence[Sequence[tuple[str, bytes | None]]] | None,
    base_timestamp: int,
) -> bytes:
    """The records section of ``encode_columns``; the loop is long because a call per field doubles its cost."""
    parts: list[Any] = []
    extend = parts.extend
    cache = _VARINT_CACHE
    cache_limit = _VARINT_CACHE_LIMIT
    length_limit = _LENGTH_CACHE_LIMIT
    null_key = keys is None
    no_headers = headers is None
    key: bytes | None = None
    key_length_bytes = _NULL_LENGTH
    headers_bytes = _NO_HEADERS
    last_timestamp: int | None = None
    timestamp_bytes = b""
    for offset_delta, value in enumerate(values):
        timestamp = timestamps[offset_delta]
        if timestamp != last_timestamp:
            last_timestamp = timestamp
            delta = timestamp - base_timestamp
            zigzag = (delta << 1) ^ (delta >> 63)
            timestamp_bytes = cache[zigzag] if 0 <= zigzag < cache_limit else encode_varlong(delta)
        offset_bytes = cache[offset_delta << 1] if offset_delta < length_limit else encode_varint(offset_delta)
        body_length = 1 + len(timestamp_bytes) + len(offset_bytes)
        if null_key:
            body_length += 1
        else:
            assert keys is not None
            key = keys[offset_delta]
            if key is None:
                key_length_bytes = _NULL_LENGTH
                body_length += 1
            else:
                key_length = len(key)
                key_length_bytes = cache[key_length << 1] if key_length < length_limit else encode_varint(key_length)
                body_length += len(key_length_bytes) + key_length
        if value is None:
            value_bytes, value_length_bytes = b"", _NULL_LENGTH
            body_length += 1
        else:
            value_bytes = value
            value_length = len(value)
            value_length_bytes = (
                cache[value_length << 1] if value_length < length_limit else encode_varint(value_length)
            )
            body_length += len(value_length_bytes) + value_length
        if not no_headers:
            assert headers is not None
            record_headers = headers[offset_delta]
            headers_bytes = _encode_headers(record_headers) if record_headers else _NO_HEADERS
        body_length += len(headers_bytes)
        length_bytes = cache[body_length << 1] if body_length < length_limit else encode_varint(body_length)
        if key is None:
            extend(
                (
                    length_bytes,
                    _RECORD_ATTRIBUTES,
                    timestamp_bytes,
                    offset_bytes,
                    key_length_bytes,
                    value_length_bytes,
                    value_bytes,
                    headers_bytes,
                )
            )
        else:
            extend(
                (
                    length_bytes,
                    _RECORD_ATTRIBUTES,
                    timestamp_bytes,
                    offset_bytes,
                    key_length_bytes,
                    key,
                    value_length_bytes,
                    value_bytes,
                    headers_bytes,
                )
            )
    return b"".join(parts)


def _timestamp_of(item: Any, now_ms: int) -> int:
    if isinstance(item, tuple):
        timestamp = item[3] if len(item) > 3 else None
    else:
        timestamp = item.timestamp
    return now_ms if timestamp is None else timestamp


def _encode_records(records: Iterable[Any], base_timestamp: int, now_ms: int) -> tuple[bytes, int]:
    """All records' bytes, uncompressed, and the largest timestamp among them."""
    parts: list[Any] = []
    extend = parts.extend
    cache = _VARINT_CACHE
    cache_limit = _VARINT_CACHE_LIMIT
    length_limit = _LENGTH_CACHE_LIMIT
    max_timestamp = -1
    for offset_delta, item in enumerate(records):
        if isinstance(item, tuple):
            size = len(item)
            key, value = item[0], item[1]
            headers = item[2] if size > 2 else ()
            timestamp = item[3] if size > 3 else None
        else:
            key, value, headers, timestamp = item.key, item.value, item.headers, item.timestamp
        if timestamp is None:
            timestamp = now_ms
        if timestamp > max_timestamp:
            max_timestamp = timestamp
        delta = timestamp - base_timestamp
        zigzag = (delta << 1) ^ (delta >> 63)
        timestamp_bytes = cache[zigzag] if 0 <= zigzag < cache_limit else encode_varlong(delta)
        offset_bytes = cache[offset_delta << 1] if offset_delta < length_limit else encode_varint(offset_delta)
        if key is None:
            key, key_length_bytes = b"", _NULL_LENGTH
        else:
            key_length = len(key)
            key_length_bytes = cache[key_length << 1] if key_length < length_limit else encode_varint(key_length)
        if value is None:
            value, value_length_bytes = b"", _NULL_LENGTH
        else:
            value_length = len(value)
            value_length_bytes = (
                cache[value_length << 1] if value_length < length_limit else encode_varint(value_length)
            )
        headers_bytes = _encode_headers(headers) if headers else _NO_HEADERS
        body_length = (
            1
            + len(timestamp_bytes)
            + len(offset_bytes)
            + len(key_length_bytes)
            + len(key)
            + len(value_length_bytes)
            + len(value)
            + len(headers_bytes)
        )
        extend(
            (
                cache[body_length << 1] if body_length < length_limit else encode_varint(body_length),
                _RECORD_ATTRIBUTES,
                timestamp_bytes,
                offset_bytes,
                key_length_bytes,
                key,
                value_length_bytes,
                value,
                headers_bytes,
            )
        )
    return b"".join(parts), max_timestamp


def record_size_in_bytes(record: RecordInput, offset_delta: int, timestamp_delta: int) -> int:
    """Bytes ``record`` takes in an uncompressed batch at ``offset_delta``, ``timestamp_delta`` from the base.

    Kafka's ``DefaultRecord.sizeInBytes``: exactly what ``_encode_records`` writes for the
    record there, so a batch's size is known before it is encoded
    (``RECORDS_OFFSET`` + the sum of its records' sizes).
    """
    key, value, headers = record.key, record.value, record.headers
    body_length = 1 + size_of_varlong(timestamp_delta) + size_of_varint(offset_delta)
    body_length += 1 if key is None else size_of_varint(len(key)) + len(key)
    body_length += 1 if value is None else size_of_varint(len(value)) + len(value)
    body_length += len(_encode_headers(headers)) if headers else len(_NO_HEADERS)
    return size_of_varint(body_length) + body_length


def _encode_headers(headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    parts = [encode_varint(len(headers))]
    append = parts.append
    for header_key, header_value in headers:
        key_bytes = header_key.encode("utf-8")
        append(encode_varint(len(key_bytes)))
        append(key_bytes)
        if header_value is None:
            append(_NULL_LENGTH)
        else:
            append(encode_varint(len(header_value)))
            append(header_value)
    return b"".join(parts)
