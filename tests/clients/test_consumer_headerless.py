"""Records without headers, as most producers send them, read back through a real broker field for field.

They take the consumer's short decode loop; large polls take thousands of records in
one go, small polls split the batches.
"""

from __future__ import annotations

import asyncio
import gc

import pytest

from consumer import Consumer, ConsumerRecord, TopicPartition
from producer import Producer

pytestmark = pytest.mark.integration

COUNT = 3_000


def _key(index: int) -> bytes | None:
    return None if index % 2 else f"key-{index}".encode() * (index % 12)


def _value(index: int) -> bytes | None:
    return None if index % 11 == 0 else bytes([index % 251]) * (index % 300)


async def _produce(url: str, topic: str, compression: str) -> list[ConsumerRecord]:
    sent = []
    async with Producer(url, compression=compression, acks="all", linger_ms=20) as producer:
        futures = [(i, await producer.send(topic, _value(i), key=_key(i))) for i in range(COUNT)]
        for index, future in futures:
            metadata = await future
            sent.append(ConsumerRecord(topic, 0, metadata.offset, metadata.timestamp, 0, _key(index), _value(index)))
    return sent


async def _consume(url: str, tp: TopicPartition, max_poll_records: int) -> list[ConsumerRecord]:
    received: list[ConsumerRecord] = []
    async with Consumer(url, auto_offset_reset="earliest", max_poll_records=max_poll_records) as consumer:
        consumer.assign([tp])
        async with asyncio.timeout(30):
            while len(received) < COUNT:
                batch = (await consumer.getmany(timeout_ms=1000)).get(tp, [])
                assert len(batch) <= max_poll_records
                received.extend(batch)
                if batch:
                    assert await consumer.position(tp) == batch[-1].offset + 1
        assert await consumer.getmany(timeout_ms=200) == {}
    return received


@pytest.mark.parametrize("compression", ["none", "lz4"])
async def test_headerless_records_read_back_as_sent_in_large_and_small_polls(url, make_topic, compression) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    sent = await _produce(url, topic, compression)
    for max_poll_records in (20_000, 333):
        received = await _consume(url, tp, max_poll_records)
        epoch = received[0].leader_epoch
        assert epoch >= 0
        expected = [ConsumerRecord(r.topic, 0, r.offset, r.timestamp, 0, r.key, r.value, [], epoch) for r in sent]
        assert received == expected
        assert [record.offset for record in received] == list(range(COUNT))
        assert received[0].headers is received[0].headers and received[0].headers is not received[1].headers
        assert gc.isenabled()
