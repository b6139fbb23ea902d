"""Consumer positions against a real broker: seek, resets, long-poll, truncation, sync facades."""

from __future__ import annotations

import asyncio
import time

import pytest

from consumer import (
    Consumer,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    SyncConsumer,
    TopicPartition,
)
from producer import Producer, SyncProducer
from tests.clients.conftest import MakeTopic
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration


async def _produce(url: str, topic: str, count: int, start: int = 0, partition: int = 0) -> None:
    async with Producer(url, acks="all") as producer:
        futures = [
            await producer.send(topic, f"v{i}".encode(), partition=partition) for i in range(start, start + count)
        ]
        await asyncio.gather(*futures)


async def _values(consumer: Consumer, count: int) -> list[bytes | None]:
    values: list[bytes | None] = []
    async with asyncio.timeout(15):
        while len(values) < count:
            for records in (await consumer.getmany(timeout_ms=500, max_records=count - len(values))).values():
                values.extend(r.value for r in records)
    return values


async def test_seek_seek_to_beginning_and_seek_to_end(url, make_topic) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    await _produce(url, topic, 20)
    async with Consumer(url, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        assert await _values(consumer, 5) == [f"v{i}".encode() for i in range(5)]
        assert await consumer.position(tp) == 5
        consumer.seek(tp, 15)
        assert await _values(consumer, 5) == [f"v{i}".encode() for i in range(15, 20)]
        await consumer.seek_to_beginning(tp)
        assert await consumer.position(tp) == 0
        assert (await _values(consumer, 1)) == [b"v0"]
        await consumer.seek_to_end(tp)
        assert await consumer.position(tp) == 20
        assert await consumer.getmany(timeout_ms=300) == {}
        await _produce(url, topic, 1, start=20)
        assert await _values(consumer, 1) == [b"v20"]
        assert consumer.highwater(tp) == 21


@pytest.mark.parametrize(("reset", "expected_position"), [("earliest", 0), ("latest", 10)])
async def test_auto_offset_reset_sets_the_first_position(url, make_topic, reset, expected_position) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    await _produce(url, topic, 10)
    async with Consumer(url, auto_offset_reset=reset) as consumer:
        consumer.assign([tp])
        assert await consumer.position(tp) == expected_position


async def test_auto_offset_reset_none_raises_without_a_position(url, make_topic) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    async with Consumer(url, auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        with pytest.raises(NoOffsetForPartitionError):
            await consumer.getmany(timeout_ms=2000)
        consumer.seek(tp, 0)
        await _produce(url, topic, 1)
        assert await _values(consumer, 1) == [b"v0"]


async def test_an_offset_past_the_end_raises_with_none_and_resets_otherwise(url, make_topic) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    await _produce(url, topic, 5)
    async with Consumer(url, auto_offset_reset="none") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 50)
        with pytest.raises(OffsetOutOfRangeError) as raised:
            await consumer.getmany(timeout_ms=2000)
        assert raised.value.details["log_end_offset"] == 5
    async with Consumer(url, auto_offset_reset="earliest") as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 50)
        assert await _values(consumer, 5) == [f"v{i}".encode() for i in range(5)]


FETCH_MAX_WAIT_MS = 10_000
"""How long a fetch may wait on the broker: a poll that returned only then did not return on arrival."""


async def test_a_long_poll_returns_as_soon_as_a_record_arrives(url: str, make_topic: MakeTopic) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    async with Consumer(url, auto_offset_reset="latest", fetch_max_wait_ms=FETCH_MAX_WAIT_MS) as consumer:
        consumer.assign([tp])
        assert await consumer.position(tp) == 0
        poll = asyncio.create_task(consumer.getmany(timeout_ms=15_000))
        # Nothing to await for "still waiting": half a second without an answer is the evidence.
        done, _ = await asyncio.wait({poll}, timeout=0.5)
        assert not done, "the poll returned before any record arrived"
        await _produce(url, topic, 1)
        done, _ = await asyncio.wait({poll}, timeout=FETCH_MAX_WAIT_MS / 2000)
        assert done, "the poll waited out the broker's fetch wait instead of returning on the record"
        records = poll.result()
    assert [r.value for r in records[tp]] == [b"v0"]


async def test_getmany_times_out_empty_when_nothing_arrives(url: str, make_topic: MakeTopic) -> None:
    """It waits out its own timeout (no sooner), and not the broker's longer fetch wait."""
    topic = make_topic(partitions=1)
    async with Consumer(url, auto_offset_reset="latest", fetch_max_wait_ms=FETCH_MAX_WAIT_MS) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        started = time.monotonic()
        assert await consumer.getmany(timeout_ms=400) == {}
        elapsed_s = time.monotonic() - started
    assert elapsed_s >= 0.35, f"returned after {elapsed_s:.2f} s, before its 0.4 s timeout"
    assert elapsed_s < FETCH_MAX_WAIT_MS / 2000, f"returned after {elapsed_s:.2f} s: it waited out the fetch"


def _recreate(cluster: Cluster, topic: str) -> None:
    """Delete ``topic`` and create it again, empty, once the deletion is done."""
    status, reply = cluster.v3("DELETE", f"/topics/{topic}")
    assert status in (200, 204), reply
    cluster.wait_until(lambda: cluster.v3("GET", f"/topics/{topic}")[0] == 404, f"{topic} to be deleted")
    cluster.create_topic(topic, 1, replication_factor=1)


@pytest.mark.parametrize("reset", ["none", "earliest"])
async def test_a_log_shorter_than_what_was_consumed_is_detected(
    url: str, cluster: Cluster, make_topic: MakeTopic, reset: str
) -> None:
    topic = make_topic(partitions=1)
    tp = TopicPartition(topic, 0)
    await _produce(url, topic, 10)
    async with Consumer(url, auto_offset_reset=reset, metadata_max_age_ms=100) as consumer:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        assert len(await _values(consumer, 10)) == 10
        assert consumer.last_leader_epoch(tp) is not None
        _recreate(cluster, topic)
        await _produce(url, topic, 3, start=100)
        if reset == "none":
            with pytest.raises(LogTruncationError) as raised:
                async with asyncio.timeout(15):
                    while True:
                        assert await consumer.getmany(timeout_ms=500) == {}
            assert raised.value.position == 10 and raised.value.divergent_offset <= 3
        else:
            assert await _values(consumer, 3) == [b"v100", b"v101", b"v102"]


def test_sync_producer_and_consumer(url, make_topic) -> None:
    topic = make_topic(partitions=2)
    with SyncProducer(url, acks="all", linger_ms=1) as producer:
        futures = [producer.send(topic, f"s{i}".encode(), key=b"same-key") for i in range(30)]
        producer.flush()
        offsets = [f.result(10).offset for f in futures]
        assert offsets == list(range(30))
        last = producer.send_and_wait(topic, b"last", key=b"same-key")
        assert last.offset == 30
    partition = last.partition
    with SyncConsumer(url, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, partition)])
        values = []
        for record in consumer:
            values.append(record.value)
            if len(values) == 31:
                break
        assert values == [f"s{i}".encode() for i in range(30)] + [b"last"]
        assert consumer.position(TopicPartition(topic, partition)) == 31
