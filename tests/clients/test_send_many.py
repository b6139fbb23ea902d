"""``Producer.send_many`` and ``send(want_future=False)`` against a real broker process."""

from __future__ import annotations

import asyncio

import pytest

from broker.partitioner import partition_for_key
from producer import Producer, SyncProducer
from tests.clients.test_produce_consume import _consume_all

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("acks", ["1", "all"])
async def test_send_many_delivers_every_record_once_in_order_with_keys_headers_and_offsets(
    url, make_topic, acks
) -> None:
    topic = make_topic(partitions=3)
    count = 3_000
    keys = [f"key-{index % 11}".encode() if index % 5 else None for index in range(count)]
    values = [f"value-{index}".encode() * (1 + index % 4) for index in range(count)]
    headers = [[("index", str(index).encode())] if index % 3 == 0 else [] for index in range(count)]
    async with Producer(url, acks=acks, linger_ms=2, batch_size=4_096) as producer:
        first = await producer.send_many(topic, values[:1_000], keys=keys[:1_000], headers=headers[:1_000])
        second = await producer.send_many(topic, values[1_000:], keys=keys[1_000:], headers=headers[1_000:])
        results = [*(await first).metadata(), *(await second).metadata()]
    records = await _consume_all(url, topic, 3, count)
    by_position = {(r.partition, r.offset): r for r in records}
    assert len(by_position) == count, "every record once"
    for index, metadata in enumerate(results):
        record = by_position[(metadata.partition, metadata.offset)]
        assert (record.key, record.value, record.headers) == (keys[index], values[index], headers[index])
        assert record.timestamp == metadata.timestamp
        key = keys[index]
        if key is not None:
            assert metadata.partition == partition_for_key(key, 3)
    for partition in range(3):
        in_log = [r.value for r in sorted(records, key=lambda r: r.offset) if r.partition == partition]
        sent = [values[i] for i, m in enumerate(results) if m.partition == partition]
        assert in_log == sent, "call order is log order within a partition"


async def test_unkeyed_send_many_goes_to_one_partition_and_acks_0_reports_no_offsets(url, make_topic) -> None:
    topic = make_topic(partitions=3)
    values = [str(index).encode() for index in range(500)]
    async with Producer(url, acks="0") as producer:
        result = await (await producer.send_many(topic, values))
    assert len(set(result.partitions())) == 1
    assert set(result.offsets()) == {-1}
    records = await _consume_all(url, topic, 3, 500)
    assert [r.value for r in sorted(records, key=lambda r: r.offset)] == values


async def test_sends_without_futures_all_arrive_after_flush(url, make_topic) -> None:
    topic = make_topic(partitions=2)
    async with Producer(url, linger_ms=1) as producer:
        for index in range(2_000):
            await producer.send(topic, str(index).encode(), partition=index % 2, want_future=False)
        await producer.flush()
        assert producer.failed_records == 0
    records = await _consume_all(url, topic, 2, 2_000)
    for partition in range(2):
        values = [r.value for r in sorted(records, key=lambda r: r.offset) if r.partition == partition]
        assert values == [str(index).encode() for index in range(partition, 2_000, 2)]


async def test_the_blocking_producer_sends_many_too(url, make_topic) -> None:
    topic = make_topic(partitions=1)
    values = [f"sync-{index}".encode() for index in range(300)]
    producer = SyncProducer(url)
    try:
        result = await asyncio.wrap_future(producer.send_many(topic, values))
    finally:
        producer.close()
    assert result.offsets() == list(range(300))
    records = await _consume_all(url, topic, 1, 300)
    assert [r.value for r in records] == values
