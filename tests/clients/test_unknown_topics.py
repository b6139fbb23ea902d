"""A consumer told to read a topic the cluster does not have says so, against a real broker.

``getmany``/``poll`` raise ``UNKNOWN_TOPIC_OR_PARTITION`` naming the topic (as the HTTP
API answers 404 and librdkafka's poll delivers "Subscribed topic not available"), once
per missing topic; a topic created a moment later is read as usual, a pattern
subscription never raises, and once its topics are known a poll asks for no metadata.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

import pytest

from broker.errors import UnknownPartition, UnknownTopic, UnknownTopicOrPartition
from consumer import Consumer, ConsumerRecord, SyncConsumer, TopicPartition
from producer import Producer
from tests.clients.conftest import MakeTopic

pytestmark = pytest.mark.integration

POLL_MS = 5_000
"""Long enough that a poll which does not raise fails the test by returning empty."""
GROUP_SETTINGS = {"auto_offset_reset": "earliest", "session_timeout_ms": 2000, "heartbeat_interval_ms": 300}


async def _produce_one(url: str, topic: str) -> None:
    async with Producer(url, acks="all", linger_ms=0) as producer:
        await producer.send_and_wait(topic, b"here", partition=0)


async def _read_one(consumer: Consumer) -> list[ConsumerRecord]:
    async with asyncio.timeout(20):
        while True:
            batches = await consumer.getmany(timeout_ms=500)
            if batches:
                return [record for records in batches.values() for record in records]


class _Logged(logging.Handler):
    """Sets ``seen`` once the library logs a message starting with ``prefix``: a condition to wait on."""

    def __init__(self, prefix: str) -> None:
        super().__init__(logging.DEBUG)
        self.prefix = prefix
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(self.prefix):
            self.seen.set()


@contextlib.contextmanager
def _logged(logger_name: str, prefix: str) -> Iterator[asyncio.Event]:
    logger, handler = logging.getLogger(logger_name), _Logged(prefix)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler.seen
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


async def test_getmany_names_an_assigned_topic_that_does_not_exist(prefix: str, url: str) -> None:
    topic = f"{prefix}-missing"
    async with Consumer(url, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(UnknownTopic) as raised:
            await consumer.getmany(timeout_ms=POLL_MS)
    assert str(raised.value) == f"assigned topic '{topic}' does not exist ({topic}-0)"
    assert raised.value.name == "UNKNOWN_TOPIC_OR_PARTITION" and raised.value.http_status == 404
    assert raised.value.details == {"topics": [topic], "partitions": [f"{topic}-0"]}


async def test_getmany_names_an_assigned_partition_the_topic_does_not_have(url: str, make_topic: MakeTopic) -> None:
    topic = make_topic(partitions=2)
    async with Consumer(url, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 5)])
        with pytest.raises(UnknownPartition) as raised:
            await consumer.getmany(timeout_ms=POLL_MS)
    assert str(raised.value) == f"assigned partition {topic}-5 does not exist: topic '{topic}' has partitions 0..1"


async def test_a_missing_topic_is_raised_once_and_read_once_it_is_created(
    prefix: str, url: str, make_topic: MakeTopic
) -> None:
    topic = f"{prefix}-missing"
    async with Consumer(url, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(UnknownTopic):
            await consumer.getmany(timeout_ms=POLL_MS)
        assert await consumer.getmany(timeout_ms=200) == {}, "reported once: a loop that catches it reads on"
        make_topic(partitions=1, name=topic)
        await _produce_one(url, topic)
        assert [record.value for record in await _read_one(consumer)] == [b"here"]


async def test_a_topic_created_after_its_fetcher_missed_it_is_read_without_an_error(
    prefix: str, url: str, make_topic: MakeTopic
) -> None:
    """The suspicion a fetcher formed before the topic existed is checked again by the poll, and refuted."""
    topic = f"{prefix}-missing"
    async with Consumer(url, auto_offset_reset="earliest") as consumer:
        with _logged("highwater.consumer.fetcher", f"fetch_retry topic={topic} partition=0") as missed:
            consumer.assign([TopicPartition(topic, 0)])
            async with asyncio.timeout(20):
                await missed.wait()
        make_topic(partitions=1, name=topic)
        await _produce_one(url, topic)
        assert [record.value for record in await _read_one(consumer)] == [b"here"]


def test_poll_of_the_sync_consumer_names_the_missing_topic(prefix: str, url: str) -> None:
    topic = f"{prefix}-missing"
    with SyncConsumer(url, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        with pytest.raises(UnknownTopicOrPartition, match=f"assigned topic '{topic}' does not exist"):
            consumer.poll(timeout_ms=POLL_MS)


async def test_a_subscribed_topic_that_does_not_exist_is_named_then_read_once_created(
    prefix: str, url: str, make_topic: MakeTopic
) -> None:
    topic = f"{prefix}-missing"
    async with Consumer(url, group_id=f"group-{topic}", **GROUP_SETTINGS) as consumer:
        consumer.subscribe([topic])
        with pytest.raises(UnknownTopic) as raised:
            await consumer.getmany(timeout_ms=POLL_MS)
        assert str(raised.value) == f"subscribed topic '{topic}' does not exist"
        make_topic(partitions=1, name=topic)
        await _produce_one(url, topic)
        assert [record.value for record in await _read_one(consumer)] == [b"here"]


async def test_a_topic_created_between_subscribe_and_poll_is_read_without_an_error(
    prefix: str, url: str, make_topic: MakeTopic
) -> None:
    topic = f"{prefix}-missing"
    async with Consumer(url, group_id=f"group-{topic}", **GROUP_SETTINGS) as consumer:
        consumer.subscribe([topic])
        make_topic(partitions=1, name=topic)
        await _produce_one(url, topic)
        assert [record.value for record in await _read_one(consumer)] == [b"here"]


async def test_a_pattern_subscription_never_raises_for_a_missing_topic(prefix: str, url: str) -> None:
    async with Consumer(url, group_id=f"{prefix}-group", **GROUP_SETTINGS) as consumer:
        consumer.subscribe(pattern=rf"{prefix}-missing-.*")
        assert await consumer.getmany(timeout_ms=1_000) == {}


async def test_once_its_topics_are_known_a_poll_asks_for_no_metadata(
    url: str, make_topic: MakeTopic, caplog: pytest.LogCaptureFixture
) -> None:
    topic = make_topic(partitions=1)
    await _produce_one(url, topic)
    async with Consumer(url, group_id=f"group-{topic}", **GROUP_SETTINGS) as consumer:
        consumer.subscribe([topic])
        await _read_one(consumer)
        with caplog.at_level(logging.DEBUG, logger="highwater"):
            for _ in range(10):
                assert await consumer.getmany(timeout_ms=50) == {}
    refreshes = [record for record in caplog.records if record.getMessage().startswith("metadata_refreshed")]
    assert refreshes == []
