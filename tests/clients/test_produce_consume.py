"""Producer and consumer against a real broker process: delivery, order, batching, compression."""

from __future__ import annotations

import asyncio

import pytest

from broker.errors import UnknownTopicOrPartition
from broker.partitioner import partition_for_key
from consumer import Consumer, ConsumerRecord, TopicPartition
from producer import Producer, RecordMetadata

pytestmark = pytest.mark.integration


async def _read_exactly(consumer: Consumer, count: int, timeout_s: float = 20.0) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    async with asyncio.timeout(timeout_s):
        while len(records) < count:
            for batch in (await consumer.getmany(timeout_ms=1000)).values():
                records.extend(batch)
    assert len(records) == count
    return records


async def _consume_all(url: str, topic: str, partitions: int, count: int, **settings) -> list[ConsumerRecord]:
    async with Consumer(url, auto_offset_reset="earliest", **settings) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        records = await _read_exactly(consumer, count)
        assert await consumer.getmany(timeout_ms=200) == {}, "nothing beyond what was produced"
        return records


@pytest.mark.parametrize("acks", ["1", "all"])
async def test_every_record_comes_back_in_order_with_key_value_and_headers(url, make_topic, acks) -> None:
    topic = make_topic(partitions=3)
    sent: list[tuple[bytes, bytes, list, RecordMetadata]] = []
    async with Producer(url, acks=acks, linger_ms=2) as producer:
        futures = []
        for index in range(600):
            key, value = f"key-{index % 40}".encode(), f"value-{index}".encode()
            headers = [("index", str(index).encode()), ("empty", None)]
            futures.append((key, value, headers, await producer.send(topic, value, key=key, headers=headers)))
        for key, value, headers, future in futures:
            sent.append((key, value, headers, await future))
    for key, _, _, metadata in sent:
        assert metadata.partition == partition_for_key(key, 3)
    records = await _consume_all(url, topic, 3, len(sent))
    by_position = {(r.partition, r.offset): r for r in records}
    for key, value, headers, metadata in sent:
        record = by_position[(metadata.partition, metadata.offset)]
        assert (record.key, record.value, record.headers) == (key, value, headers)
        assert record.timestamp == metadata.timestamp
    for partition in range(3):
        offsets = [r.offset for r in records if r.partition == partition]
        assert offsets == list(range(len(offsets))), "each partition is read in offset order without gaps"
        values = [r.value for r in records if r.partition == partition]
        sent_values = [v for k, v, _, m in sent if m.partition == partition]
        assert values == sent_values, "send order is log order within a partition"


async def test_records_are_batched_into_far_fewer_requests(url, make_topic) -> None:
    topic = make_topic(partitions=1)
    async with Producer(url, acks="1", linger_ms=20, batch_size=64 * 1024) as producer:
        futures = [await producer.send(topic, b"x" * 100) for _ in range(2000)]
        await producer.flush()
        offsets = [(await future).offset for future in futures]
        assert offsets == list(range(2000))
        assert producer.requests_sent <= 20, f"{producer.requests_sent} requests for 2000 records"


async def test_unkeyed_records_stick_to_a_partition_per_batch(url, make_topic) -> None:
    topic = make_topic(partitions=4)
    async with Producer(url, acks="1", linger_ms=50) as producer:
        first = [await producer.send(topic, b"a") for _ in range(20)]
        partitions = {(await f).partition for f in first}
        assert len(partitions) == 1, "records of one linger window share one partition's batch"
        following = await producer.send_and_wait(topic, b"b")
        assert following.partition not in partitions, "the partition switches once its batch was sent"


@pytest.mark.parametrize("compression", ["gzip", "lz4", "zstd"])
async def test_compressed_batches_read_back(url, make_topic, compression) -> None:
    topic = make_topic(partitions=1)
    async with Producer(url, compression=compression, acks="all") as producer:
        futures = [await producer.send(topic, f"compressible {i} ".encode() * 20) for i in range(300)]
        await producer.flush()
        assert [(await f).offset for f in futures] == list(range(300))
    records = await _consume_all(url, topic, 1, 300)
    assert records[299].value == b"compressible 299 " * 20


async def test_acks_0_reports_no_offset_but_the_records_arrive(url, make_topic) -> None:
    topic = make_topic(partitions=1)
    async with Producer(url, acks="0") as producer:
        futures = [await producer.send(topic, f"{i}".encode()) for i in range(50)]
        await producer.flush()
        assert {(await f).offset for f in futures} == {-1}
    records = await _consume_all(url, topic, 1, 50)
    assert [r.value for r in records] == [f"{i}".encode() for i in range(50)]


async def test_sending_to_an_unknown_topic_fails_at_once(url) -> None:
    async with Producer(url) as producer:
        with pytest.raises(UnknownTopicOrPartition):
            await producer.send("no-such-topic", b"x")


async def test_small_fetch_limits_still_read_everything(url, make_topic) -> None:
    topic = make_topic(partitions=2)
    async with Producer(url, acks="1", batch_size=2048) as producer:
        futures = [await producer.send(topic, bytes(500), partition=i % 2) for i in range(400)]
        await producer.flush()
        await asyncio.gather(*futures)
    records = await _consume_all(
        url, topic, 2, 400, fetch_max_bytes=8192, max_partition_fetch_bytes=4096, max_poll_records=37
    )
    assert sorted((r.partition, r.offset) for r in records) == [(p, o) for p in range(2) for o in range(200)]
