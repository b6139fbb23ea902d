"""Lazily read records against a real broker: every field as sent, positions exact when polls split batches."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from consumer import Consumer, ConsumerRecord, TopicPartition
from producer import Producer

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("compression", ["none", "zstd"])
async def test_small_polls_split_batches_and_hand_out_every_field_as_sent(url, make_topic, compression) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    sent = []
    async with Producer(url, compression=compression, acks="all", linger_ms=20) as producer:
        futures = []
        for index in range(250):
            key = None if index % 5 == 0 else f"key-{index}".encode()
            value = None if index % 7 == 0 else bytes([index % 256]) * (index % 120)
            headers = [("i", str(index).encode()), ("none", None)] if index % 3 else []
            futures.append((key, value, headers, await producer.send(topic, value, key=key, headers=headers)))
        for key, value, headers, future in futures:
            metadata = await future
            sent.append(ConsumerRecord(topic, 0, metadata.offset, metadata.timestamp, 0, key, value, headers))
    async with Consumer(url, auto_offset_reset="earliest", max_poll_records=7) as consumer:
        consumer.assign([tp])
        received: list[ConsumerRecord] = []
        async with asyncio.timeout(20):
            while len(received) < len(sent):
                batch = (await consumer.getmany(timeout_ms=1000)).get(tp, [])
                assert len(batch) <= 7
                received.extend(batch)
                if batch:
                    assert await consumer.position(tp) == batch[-1].offset + 1
        assert await consumer.getmany(timeout_ms=200) == {}
    epochs = {record.leader_epoch for record in received}
    assert len(epochs) == 1 and next(iter(epochs)) >= 0
    expected = [
        ConsumerRecord(
            r.topic, r.partition, r.offset, r.timestamp, 0, r.key, r.value, r.headers, received[0].leader_epoch
        )
        for r in sent
    ]
    assert received == expected
    assert pickle.loads(pickle.dumps(received)) == expected
