"""The consumer decodes a fetched batch once, trusting the CRC the take checked, and splits it exactly."""

from __future__ import annotations

import struct

import pytest

from broker.client.types import FetchResult, TopicPartition
from broker.record.codec import encode_columns
from broker.record.compression import GZIP, LZ4, NONE, ZSTD
from broker.record.header import CRC_OFFSET
from broker.record.lazy import LazyBatch, checked_batch
from consumer.fetch_buffer import CompletedFetch

TS = 1_700_000_000_000
TP = TopicPartition("orders", 0)


def _batch(base_offset: int, count: int, compression: int = NONE, keyed: bool = False) -> bytes:
    values = [b"%d" % (base_offset + i) * 40 for i in range(count)]
    keys = [b"k%d" % (base_offset + i) for i in range(count)] if keyed else None
    data = bytearray(encode_columns(values, [TS + i for i in range(count)], keys=keys, compression=compression))
    struct.pack_into(">q", data, 0, base_offset)
    return bytes(data)


def test_the_decode_does_not_check_the_crc_again() -> None:
    """The stored CRC is changed after ``checked_batch`` checked it: only a second check could notice."""
    data = bytearray(_batch(0, 3))
    header, view = checked_batch(memoryview(data), 0)
    struct.pack_into(">I", data, CRC_OFFSET, header.crc ^ 1)
    columns = LazyBatch(view, header).decode()
    assert columns.values == [b"0" * 40, b"1" * 40, b"2" * 40] and columns.offsets == [0, 1, 2]


@pytest.mark.parametrize("compression", [NONE, GZIP, LZ4, ZSTD])
@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("max_records", [1, 7, 999, 1000, 1001, 5000])
def test_takes_of_any_size_split_headerless_batches_at_exact_offsets(
    compression: int, keyed: bool, max_records: int
) -> None:
    data = b"".join(_batch(base, 1000, compression, keyed) for base in (0, 1000, 2000))
    completed = CompletedFetch(TP, 0, 0, FetchResult(data, 2500, 0, 3000, 2500))
    position, offsets, values, keys = 0, [], [], []
    while True:
        taken = completed.take(position, max_records, None)
        assert len(taken.records) <= max_records
        offsets += [record.offset for record in taken.records]
        values += [record.value for record in taken.records]
        keys += [record.key for record in taken.records]
        position = taken.next_offset
        if taken.exhausted:
            break
    assert offsets == list(range(2500)), "every record below the high watermark, none above it"
    assert values == [b"%d" % offset * 40 for offset in range(2500)]
    assert keys == ([b"k%d" % offset for offset in range(2500)] if keyed else [None] * 2500)
    assert position == 2500
