"""The fixed 61-byte header of an Apache Kafka record batch, magic 2, byte for byte.

Layout (big-endian), as Kafka's ``DefaultRecordBatch``::

    base_offset             int64   0   stamped by the leader, outside the CRC
    batch_length            int32   8   bytes after this field
    partition_leader_epoch  int32  12   stamped by the leader, outside the CRC
    magic                   int8   16   always 2
    crc                     uint32 17   CRC-32C of attributes .. end of batch
    attributes              int16  21   bits 0-2 compression, 3 timestamp type,
                                        4 transactional, 5 control, 6 delete horizon
    last_offset_delta       int32  23
    base_timestamp          int64  27
    max_timestamp           int64  35
    producer_id             int64  43
    producer_epoch          int16  51
    base_sequence           int32  53
    records_count           int32  57
    records ...                    61

The broker only ever needs this header: it validates a batch from the header and
CRC, stamps ``base_offset`` and ``partition_leader_epoch`` in place (both outside the
CRC, so the CRC never has to be recomputed) and moves the bytes. Records are decoded
only on the JSON paths (``broker.record.decode``; produced batches are walked, not decoded, by its ``validate_produced_batches``).

This module is pure: no asyncio, no files.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c as _crc32c

from broker.errors import CorruptRecord

BASE_OFFSET_OFFSET = 0
BASE_OFFSET_LENGTH = 8
LENGTH_OFFSET = BASE_OFFSET_OFFSET + BASE_OFFSET_LENGTH
LENGTH_LENGTH = 4
PARTITION_LEADER_EPOCH_OFFSET = LENGTH_OFFSET + LENGTH_LENGTH
PARTITION_LEADER_EPOCH_LENGTH = 4
MAGIC_OFFSET = PARTITION_LEADER_EPOCH_OFFSET + PARTITION_LEADER_EPOCH_LENGTH
MAGIC_LENGTH = 1
CRC_OFFSET = MAGIC_OFFSET + MAGIC_LENGTH
CRC_LENGTH = 4
ATTRIBUTES_OFFSET = CRC_OFFSET + CRC_LENGTH
ATTRIBUTE_LENGTH = 2
LAST_OFFSET_DELTA_OFFSET = ATTRIBUTES_OFFSET + ATTRIBUTE_LENGTH
LAST_OFFSET_DELTA_LENGTH = 4
BASE_TIMESTAMP_OFFSET = LAST_OFFSET_DELTA_OFFSET + LAST_OFFSET_DELTA_LENGTH
BASE_TIMESTAMP_LENGTH = 8
MAX_TIMESTAMP_OFFSET = BASE_TIMESTAMP_OFFSET + BASE_TIMESTAMP_LENGTH
MAX_TIMESTAMP_LENGTH = 8
PRODUCER_ID_OFFSET = MAX_TIMESTAMP_OFFSET + MAX_TIMESTAMP_LENGTH
PRODUCER_ID_LENGTH = 8
PRODUCER_EPOCH_OFFSET = PRODUCER_ID_OFFSET + PRODUCER_ID_LENGTH
PRODUCER_EPOCH_LENGTH = 2
BASE_SEQUENCE_OFFSET = PRODUCER_EPOCH_OFFSET + PRODUCER_EPOCH_LENGTH
BASE_SEQUENCE_LENGTH = 4
RECORDS_COUNT_OFFSET = BASE_SEQUENCE_OFFSET + BASE_SEQUENCE_LENGTH
RECORDS_COUNT_LENGTH = 4
RECORDS_OFFSET = RECORDS_COUNT_OFFSET + RECORDS_COUNT_LENGTH
RECORD_BATCH_OVERHEAD = RECORDS_OFFSET
LOG_OVERHEAD = LENGTH_OFFSET + LENGTH_LENGTH
"""Bytes before ``batch_length`` counts: a batch occupies ``batch_length + LOG_OVERHEAD``."""

MAGIC = 2
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40
SUPPORTED_COMPRESSION = frozenset({0, 1, 3, 4})
_CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
"""none, gzip, lz4, zstd; snappy (2) is refused at the door rather than failing every reader."""

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_LENGTH_AND_EPOCH = struct.Struct(">ii")
_BASE_OFFSET_AND_LENGTH = struct.Struct(">qi")

assert _HEADER.size == RECORD_BATCH_OVERHEAD


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli), the checksum of record batch v2."""
    return _crc32c(data)


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The decoded header of one batch; ``position`` is where it starts in its buffer."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int = 0

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Decode the header at ``position``; check it is whole and of magic 2 (not the CRC)."""
    available = len(buf) - position
    if available < RECORD_BATCH_OVERHEAD:
        raise CorruptRecord(
            f"truncated record batch at byte {position}: {available} bytes, "
            f"a batch header needs {RECORD_BATCH_OVERHEAD}"
        )
    fields = _HEADER.unpack_from(buf, position)
    # struct's stubs type unpack_from as a tuple of unknown length: mypy cannot see it fills the 13 fields.
    header = BatchHeader(*fields, position=position)  # type: ignore[misc]
    if header.magic != MAGIC:
        raise CorruptRecord(
            f"unsupported record batch magic {header.magic} at byte {position}: only magic 2 is accepted"
        )
    if header.batch_length < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD:
        raise CorruptRecord(f"record batch at byte {position} has impossible length {header.batch_length}")
    if header.size > available:
        raise CorruptRecord(
            f"truncated record batch at byte {position}: length says {header.size} bytes, {available} present"
        )
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptRecord(f"record batch at byte {position} has a negative offset delta or record count")
    return header


def validate_batch(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Read the header and verify the CRC-32C over attributes .. end of the batch."""
    header = read_header(buf, position)
    if header.compression not in SUPPORTED_COMPRESSION:
        raise CorruptRecord(
            f"record batch at byte {position} uses compression codec {header.compression} ({_CODEC_NAMES.get(header.compression, 'unknown')}), "
            "which this broker does not support (use none, gzip, lz4 or zstd)"
        )
    view = memoryview(buf)
    computed = crc32c(view[position + ATTRIBUTES_OFFSET : position + header.size])
    if computed != header.crc:
        raise CorruptRecord(
            f"record batch at byte {position} failed its CRC-32C check "
            f"(stored {header.crc:#010x}, computed {computed:#010x})"
        )
    return header


def iter_batches(buf: bytes | bytearray | memoryview, *, check_crc: bool = True) -> Iterator[BatchHeader]:
    """Walk a buffer of whole, back-to-back batches; raise ``CorruptRecord`` at the first bad one."""
    position = 0
    end = len(buf)
    check = validate_batch if check_crc else read_header
    while position < end:
        header = check(buf, position)
        yield header
        position += header.size


def next_offset_after(buf: bytes | bytearray | memoryview, offset: int) -> int:
    """The offset after the last of ``buf``'s whole, back-to-back batches; ``offset`` when ``buf`` is empty.

    Hops from one batch's length to the next and reads only the last one's offset delta:
    no header is decoded or checked, so it is for batches the log already checked (a
    read's answer), where it costs microseconds per megabyte.
    """
    position = last = 0
    base_offset = offset - 1
    delta = 0
    while position + LOG_OVERHEAD <= len(buf):
        base_offset, length = _BASE_OFFSET_AND_LENGTH.unpack_from(buf, position)
        last, position = position, position + LOG_OVERHEAD + length
    if position:
        (delta,) = _INT32.unpack_from(buf, last + LAST_OFFSET_DELTA_OFFSET)
    return base_offset + delta + 1


def stamp(buf: bytearray, position: int, base_offset: int, partition_leader_epoch: int) -> None:
    """Set base offset and leader epoch in place; both lie outside the CRC, so it stays valid."""
    _BASE_OFFSET.pack_into(buf, position + BASE_OFFSET_OFFSET, base_offset)
    _INT32.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)


def peek_size(buf: bytes | bytearray | memoryview, position: int = 0) -> int | None:
    """Total size of the batch at ``position`` from its length field, or None if fewer than 12 bytes."""
    if len(buf) - position < LOG_OVERHEAD:
        return None
    return _INT32.unpack_from(buf, position + LENGTH_OFFSET)[0] + LOG_OVERHEAD
