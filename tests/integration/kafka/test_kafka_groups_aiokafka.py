"""aiokafka in a consumer group of the classic protocol, next to a librdkafka member."""

from __future__ import annotations

import asyncio
from typing import Any

import aiokafka  # type: ignore[import-untyped]
import pytest

from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.test_kafka_groups import confluent_consumer, group_path, polled, produce
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


async def consume_share_and_commit(cluster: Cluster, group: str, topic: str) -> list[int]:
    """Join next to the other member, read what it was given, commit it; the partitions it owned."""
    consumer = aiokafka.AIOKafkaConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap(),
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=200,
    )
    await consumer.start()
    try:
        async with asyncio.timeout(30):
            while len(consumer.assignment()) != 1:
                await consumer.getmany(timeout_ms=100)
            [owned] = consumer.assignment()
            records: list[Any] = []
            while len(records) < 3:
                for batch in (await consumer.getmany(timeout_ms=100)).values():
                    records += batch
        assert [r.offset for r in records] == [0, 1, 2]
        await consumer.commit()
        return [owned.partition]
    finally:
        await consumer.stop()


def test_an_aiokafka_member_shares_partitions_with_librdkafka_and_its_commit_shows_over_http(
    kafka_cluster: Cluster,
) -> None:
    topic, group = "groups-aiokafka", "aiokafka-group"
    kafka_cluster.create_topic(topic, partitions=2, configs=MIN_ISR_2)
    produce(kafka_cluster, topic, 6, 2)
    everything = frozenset((topic, p) for p in range(2))
    with polled(confluent_consumer(kafka_cluster, group, topic)) as (_, other):
        wait_until(lambda: other.assignment == everything, "the librdkafka member owns every partition", 30)
        [owned] = asyncio.run(consume_share_and_commit(kafka_cluster, group, topic))
        wait_until(lambda: other.assignment == everything, "every partition back after aiokafka left", 30)

    status, offsets = kafka_cluster.v3("GET", group_path(group, "/offsets"), timeout_s=10)
    assert status == 200, offsets
    assert [(e["partition_id"], e["offset"]) for e in offsets["data"]] == [(owned, 3)]
