"""Kafka's key partitioner: the same key lands on the same partition as with the Java client.

``partition_for_key`` is ``BuiltInPartitioner.partitionForKey``:
``toPositive(murmur2(key)) % num_partitions``, where ``toPositive`` clears the sign bit
(it is *not* ``abs``) and ``murmur2`` is ``Utils.murmur2``, MurmurHash2 with seed
``0x9747b28c`` returning a signed 32-bit int. Matching it bit for bit matters: a
producer written against Kafka and one using highwater must agree on where a key lives,
or per-key ordering breaks.

Records without a key are not hashed; choosing their partition is the producer's job.
"""

from __future__ import annotations

import struct

MURMUR2_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_MASK_32 = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's ``Utils.murmur2``: the signed 32-bit MurmurHash2 of ``data``.

    Whole 4-byte groups are read little-endian in one ``struct`` call; the 1-3 trailing
    bytes are mixed in as the Java switch does, highest first.
    """
    length = len(data)
    h = (MURMUR2_SEED ^ length) & _MASK_32
    whole_words = length // 4
    for word in struct.unpack_from(f"<{whole_words}I", data):
        k = (word * _M) & _MASK_32
        k ^= k >> _R
        k = (k * _M) & _MASK_32
        h = ((h * _M) & _MASK_32) ^ k
    tail = length & ~3
    remaining = length - tail
    if remaining == 3:
        h ^= data[tail + 2] << 16
    if remaining >= 2:
        h ^= data[tail + 1] << 8
    if remaining >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK_32
    h ^= h >> 13
    h = (h * _M) & _MASK_32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit of a 32-bit int (maps -1 to 2**31 - 1)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition of a keyed record among ``num_partitions``, exactly as the Java producer picks it."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions
