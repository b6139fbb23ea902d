"""Variable-length integers of record batch v2, byte for byte as Kafka's ``ByteUtils``.

A record's fields are protocol-buffers style varints: 7 bits per byte, least significant
group first, the high bit set on every byte but the last. Signed values are zigzag
encoded first (``0, -1, 1, -2 ...`` become ``0, 1, 2, 3 ...``) so small negative numbers
such as a null key's length ``-1`` stay one byte long.

A *varint* holds a signed 32-bit value and is at most 5 bytes; a *varlong* holds a signed
64-bit value and is at most 10 bytes. Kafka rejects longer encodings and so do we, with
``CorruptRecord``: a record that needs them was not written by a Kafka client.

This module is pure; ``broker.record.decode`` inlines the one- and two-byte fast path of
these functions in its hot loops (``SMALL_ZIGZAG``) and falls back to them for longer encodings.
"""

from __future__ import annotations

from broker.errors import CorruptRecord

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
VARINT_MAX_BYTES = 5
VARLONG_MAX_BYTES = 10


Buffer = bytes | bytearray | memoryview

SMALL_ZIGZAG: list[int] = [(raw >> 1) ^ -(raw & 1) for raw in range(1 << 14)]
"""Signed value of every zigzag varint of one or two bytes, by its 14 payload bits: the decoders'
hot loops (``broker.record.decode``, ``spark_connector.columnar``) read short varints from it."""


def _encode_unsigned_uncached(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


UNSIGNED_VARINT_CACHE: tuple[bytes, ...] = tuple(_encode_unsigned_uncached(v) for v in range(1 << 14))
"""The encoding of every unsigned value below 2**14 (all 1- and 2-byte varints), built once."""
_SMALL_CACHE_LIMIT = len(UNSIGNED_VARINT_CACHE)


def encode_unsigned_varint(value: int) -> bytes:
    """Encode a non-negative value; Kafka's ``writeUnsignedVarint`` for values up to 2**32."""
    if value < _SMALL_CACHE_LIMIT:
        if value < 0:
            raise ValueError(f"unsigned varint cannot hold {value}")
        return UNSIGNED_VARINT_CACHE[value]
    return _encode_unsigned_uncached(value)


def encode_varint(value: int) -> bytes:
    """Zigzag-encode a signed 32-bit value (Kafka's ``writeVarint``), 1 to 5 bytes."""
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint out of the int32 range: {value}")
    return encode_unsigned_varint((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """Zigzag-encode a signed 64-bit value (Kafka's ``writeVarlong``), 1 to 10 bytes."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong out of the int64 range: {value}")
    return encode_unsigned_varint((value << 1) ^ (value >> 63))


def size_of_varint(value: int) -> int:
    """Bytes ``encode_varint(value)`` takes, without encoding it."""
    return size_of_unsigned_varint((value << 1) ^ (value >> 31))


def size_of_varlong(value: int) -> int:
    return size_of_unsigned_varint((value << 1) ^ (value >> 63))


def size_of_unsigned_varint(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def decode_unsigned_varint(buf: Buffer, position: int, max_bytes: int = VARINT_MAX_BYTES) -> tuple[int, int]:
    """Read an unsigned varint at ``position``; return ``(value, position after it)``.

    Raises ``CorruptRecord`` if the buffer ends inside it or it runs past ``max_bytes``.
    """
    result = 0
    shift = 0
    end = len(buf)
    start = position
    while True:
        if position >= end:
            raise CorruptRecord(f"truncated varint at byte {start}: the buffer ends after {end - start} bytes")
        byte = buf[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7
        if position - start >= max_bytes:
            raise CorruptRecord(f"bad varint at byte {start}: longer than {max_bytes} bytes")


def decode_varint(buf: Buffer, position: int) -> tuple[int, int]:
    """Read a zigzag varint (signed 32-bit, at most 5 bytes); return ``(value, next position)``."""
    raw, after = decode_unsigned_varint(buf, position, VARINT_MAX_BYTES)
    if raw > 0xFFFFFFFF:
        raise CorruptRecord(f"bad varint at byte {position}: value does not fit in 32 bits")
    return (raw >> 1) ^ -(raw & 1), after


def decode_varlong(buf: Buffer, position: int) -> tuple[int, int]:
    """Read a zigzag varlong (signed 64-bit, at most 10 bytes); return ``(value, next position)``."""
    raw, after = decode_unsigned_varint(buf, position, VARLONG_MAX_BYTES)
    if raw > 0xFFFFFFFFFFFFFFFF:
        raise CorruptRecord(f"bad varlong at byte {position}: value does not fit in 64 bits")
    return (raw >> 1) ^ -(raw & 1), after
