"""Plain acks=all writes and reads for the host tier's scenarios that need no chaos checker:
values written in order over a topic's partitions, then read back from the log start."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from broker.client.types import TopicPartition
from consumer import Consumer
from producer import Producer
from tests.hosts.deployment import TOPIC_PARTITIONS

READ_TIMEOUT_S = 30.0


async def produce_all(
    urls: list[str], topic: str, values: Sequence[bytes], partitions: int = TOPIC_PARTITIONS, **settings: Any
) -> None:
    """``values`` with acks=all, the i-th to partition i % ``partitions``; returns once each is
    acknowledged. ``settings`` are the producer's (credentials, TLS, batching)."""
    producer = Producer(urls, acks="all", **settings)
    await producer.start()
    try:
        for index, value in enumerate(values):
            await producer.send(topic, value, partition=index % partitions)
        await producer.flush()
    finally:
        await producer.close()


async def read_back(urls: list[str], topic: str, count: int, partitions: int = TOPIC_PARTITIONS) -> list[bytes]:
    """The first ``count`` values of ``topic``'s partitions, read from the log start through ``urls``."""
    consumer = Consumer(urls, auto_offset_reset="earliest", fetch_max_wait_ms=100)
    consumer.assign([TopicPartition(topic, partition) for partition in range(partitions)])
    seen: list[bytes] = []
    try:
        async with asyncio.timeout(READ_TIMEOUT_S):
            while len(seen) < count:
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    seen += [record.value for record in records if record.value is not None]
    finally:
        await consumer.close()
    return seen
