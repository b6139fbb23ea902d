"""Interoperability with an independent implementation: kafka-python's record module.

Both directions, every codec we support: kafka-python must read what we write (CRC,
header fields, records, headers) and we must read what it writes. Uncompressed and
zstd batches must even be byte-identical, since both sides make the same choices.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder  # type: ignore[import-untyped]
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder  # type: ignore[import-untyped]

from broker.record.codec import RecordInput, encode_batch
from broker.record.compression import GZIP, LZ4, NONE, SUPPORTED_CODECS, ZSTD
from broker.record.decode import decode_batch, decode_columns

TIMESTAMP_MS = 1_700_000_000_000
SAMPLE = [
    RecordInput(
        b"key-%d" % i if i % 4 else None,
        b"value " * i if i % 3 else None,
        [(f"h{i}", b"x")] * (i % 3),
        TIMESTAMP_MS + i * 7,
    )
    for i in range(40)
]


def kafka_python_batch(
    records: list[RecordInput], codec: int, producer_state: tuple[int, int, int] = (-1, -1, -1)
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=producer_state[0],
        producer_epoch=producer_state[1],
        base_sequence=producer_state[2],
        batch_size=1 << 24,
    )
    for offset, record in enumerate(records):
        builder.append(
            offset, timestamp=record.timestamp, key=record.key, value=record.value, headers=list(record.headers)
        )
    return bytes(builder.build())


def as_tuples(records: list[RecordInput]) -> list[tuple[object, ...]]:
    return [(r.key, r.value, list(r.headers), r.timestamp) for r in records]


@pytest.mark.parametrize("codec", SUPPORTED_CODECS)
def test_kafka_python_reads_our_batches(codec: int) -> None:
    ours = encode_batch(SAMPLE, compression=codec, base_offset=500, producer_id=9, producer_epoch=2, base_sequence=30)
    batch = DefaultRecordBatch(bytearray(ours))
    assert batch.validate_crc()
    assert batch.compression_type == codec
    assert (batch.base_offset, batch.last_offset_delta, batch.records_count) == (500, 39, 40)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9, 2, 30)
    assert (batch.first_timestamp, batch.max_timestamp) == (TIMESTAMP_MS, TIMESTAMP_MS + 39 * 7)
    read = list(batch)
    assert [r.offset for r in read] == list(range(500, 540))
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in read] == as_tuples(SAMPLE)


@pytest.mark.parametrize("codec", SUPPORTED_CODECS)
def test_we_read_kafka_python_batches(codec: int) -> None:
    theirs = kafka_python_batch(SAMPLE, codec, producer_state=(9, 2, 30))
    header, records = decode_batch(theirs)
    assert header.compression == codec
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 30)
    assert [r.offset for r in records] == list(range(40))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == as_tuples(SAMPLE)


@pytest.mark.parametrize("codec", [NONE, ZSTD])
def test_byte_identical_to_kafka_python(codec: int) -> None:
    # kafka-python writes partition_leader_epoch 0 where the Java producer writes -1.
    assert encode_batch(SAMPLE, compression=codec, partition_leader_epoch=0) == kafka_python_batch(SAMPLE, codec)


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_memory_records_round_trip_through_both(codec: int) -> None:
    builder = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20)
    for record in SAMPLE:
        builder.append(timestamp=record.timestamp, key=record.key, value=record.value, headers=list(record.headers))
    builder.close()
    theirs = bytes(builder.buffer())
    ours = encode_batch(SAMPLE, compression=codec, base_offset=40)
    columns = decode_columns(theirs + ours)
    assert columns.offsets == list(range(80))
    assert columns.values == [r.value for r in SAMPLE] * 2
    memory_records = MemoryRecords(theirs + ours)
    offsets: list[int] = []
    while memory_records.has_next():
        offsets.extend(record.offset for record in memory_records.next_batch())
    assert offsets == list(range(80))


@settings(max_examples=40, deadline=None)
@given(
    records=st.lists(
        st.builds(
            RecordInput,
            key=st.none() | st.binary(max_size=32),
            value=st.none() | st.binary(max_size=200),
            headers=st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8)), max_size=2),
            timestamp=st.integers(0, 1 << 42),
        ),
        min_size=1,
        max_size=12,
    ),
    codec=st.sampled_from(SUPPORTED_CODECS),
)
def test_any_records_cross_both_ways(records: list[RecordInput], codec: int) -> None:
    read_by_them = DefaultRecordBatch(bytearray(encode_batch(records, compression=codec)))
    assert read_by_them.validate_crc()
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in read_by_them] == as_tuples(records)
    _, read_by_us = decode_batch(kafka_python_batch(records, codec))
    assert [(r.key, r.value, r.headers, r.timestamp) for r in read_by_us] == as_tuples(records)
