"""Hypothesis strategies of hostile record batch v2 bodies, built from real batches.

Random bytes; a real batch with one byte flipped, cut short, or followed by junk;
and a real batch with one header field rewritten and its CRC-32C recomputed, so the
checks behind the CRC (magic, length, counts, compression) are reached too.
"""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from broker.record.codec import RecordInput, encode_batch
from broker.record.header import (
    ATTRIBUTES_OFFSET,
    CRC_OFFSET,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_OFFSET,
    MAGIC_OFFSET,
    crc32c,
)

TIMESTAMP_MS = 1_700_000_000_000
RECORDS_COUNT_OFFSET = 57
"""Last field of the 61-byte header (``broker.record.header``'s layout)."""

_FIELDS = {
    "length": (LENGTH_OFFSET, 4),
    "magic": (MAGIC_OFFSET, 1),
    "attributes": (ATTRIBUTES_OFFSET, 2),
    "last_offset_delta": (LAST_OFFSET_DELTA_OFFSET, 4),
    "records_count": (RECORDS_COUNT_OFFSET, 4),
}
"""Header fields a rewrite may hit: (position, size in bytes)."""


def valid_batches() -> st.SearchStrategy[bytes]:
    record = st.tuples(st.none() | st.binary(max_size=16), st.none() | st.binary(max_size=48))
    return st.lists(record, min_size=1, max_size=4).map(
        lambda records: encode_batch([RecordInput(key, value, [], TIMESTAMP_MS) for key, value in records])
    )


def _flip(batch: bytes, index: int, mask: int) -> bytes:
    return batch[:index] + bytes([batch[index] ^ mask]) + batch[index + 1 :]


def with_crc(batch: bytes) -> bytes:
    """``batch`` with its CRC-32C recomputed over attributes .. end."""
    return batch[:CRC_OFFSET] + struct.pack(">I", crc32c(batch[ATTRIBUTES_OFFSET:])) + batch[ATTRIBUTES_OFFSET:]


def rewrite(batch: bytes, field: str, value: int) -> bytes:
    """``batch`` with ``field`` set to ``value`` (two's complement, big-endian) and a matching CRC."""
    offset, size = _FIELDS[field]
    raw = (value & ((1 << size * 8) - 1)).to_bytes(size, "big")
    return with_crc(batch[:offset] + raw + batch[offset + size :])


def flipped(batch: bytes) -> st.SearchStrategy[bytes]:
    return st.builds(_flip, st.just(batch), st.integers(0, len(batch) - 1), st.integers(1, 255))


def truncated(batch: bytes) -> st.SearchStrategy[bytes]:
    return st.integers(1, len(batch) - 1).map(lambda end: batch[:end])


def extended(batch: bytes) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=1, max_size=80).map(lambda junk: batch + junk)


def rewritten(batch: bytes) -> st.SearchStrategy[bytes]:
    return st.builds(rewrite, st.just(batch), st.sampled_from(sorted(_FIELDS)), st.integers(-(2**31), 2**31 - 1))


def hostile_batches() -> st.SearchStrategy[bytes]:
    mutations = (flipped, truncated, extended, rewritten)
    return st.one_of(
        st.binary(min_size=1, max_size=200),
        valid_batches().flatmap(lambda batch: st.one_of(*(mutate(batch) for mutate in mutations))),
    )
