"""The controller's topic changes (configs alter, partition growth) on a real sqlite store, three brokers in process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.cluster.placement import assign_added_partitions
from broker.cluster.records import TopicRecord, topic_key
from broker.errors import InvalidConfig, InvalidPartitions, NotController, UnknownTopic
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import InProcessCluster, start_cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    started = await start_cluster(tmp_path, [1, 2, 3])
    yield started
    await started.close()


async def _topic(cluster: InProcessCluster, name: str) -> tuple[TopicRecord, int]:
    kv = await cluster.observer.get(topic_key(name))
    assert kv is not None
    return TopicRecord.model_validate_json(kv.value), kv.mod_revision


async def test_growth_writes_the_count_then_new_partitions_placed_as_kafka_adds_them(cluster: InProcessCluster) -> None:
    controller = (await cluster.wait_for_controller()).controller
    await controller.create_topic(NewTopic(name="grown", partitions_count=2, replication_factor=2))
    existing = [record.replicas for record in await cluster.partitions("grown")]

    created = await controller.create_partitions("grown", 5)

    live = [(broker_id, None) for broker_id in (1, 2, 3)]
    assert [record.replicas for record in created] == assign_added_partitions(existing, 5, live)
    assert [record.partition for record in created] == [2, 3, 4]
    for record in created:
        assert (record.leader, record.isr) == (record.replicas[0], record.replicas)
        assert (record.leader_epoch, record.partition_epoch) == (0, 0)
    after = await cluster.partitions("grown")
    assert [record.replicas for record in after[:2]] == existing
    assert after[2:] == created
    assert (await _topic(cluster, "grown"))[0].partitions_count == 5


@pytest.mark.parametrize("count", [2, 1])
async def test_a_count_that_does_not_grow_changes_nothing(cluster: InProcessCluster, count: int) -> None:
    controller = (await cluster.wait_for_controller()).controller
    await controller.create_topic(NewTopic(name="fixed", partitions_count=2, replication_factor=1))
    _, revision = await _topic(cluster, "fixed")
    with pytest.raises(InvalidPartitions):
        await controller.create_partitions("fixed", count)
    assert (await _topic(cluster, "fixed"))[1] == revision
    assert len(await cluster.partitions("fixed")) == 2


async def test_a_refused_update_writes_nothing_and_an_unknown_topic_is_unknown(cluster: InProcessCluster) -> None:
    controller = (await cluster.wait_for_controller()).controller
    await controller.create_topic(
        NewTopic(name="kept", partitions_count=1, replication_factor=1, configs={"retention.ms": "5"})
    )
    kept, revision = await _topic(cluster, "kept")

    def refuse(topic: TopicRecord) -> TopicRecord:
        raise InvalidConfig("refused", config="x")

    with pytest.raises(InvalidConfig):
        await controller.update_topic("kept", refuse)
    assert await _topic(cluster, "kept") == (
        TopicRecord(
            name="kept",
            topic_id=kept.topic_id,
            partitions_count=1,
            replication_factor=1,
            configs={"retention.ms": "5"},
        ),
        revision,
    )
    with pytest.raises(UnknownTopic):
        await controller.update_topic("absent", lambda topic: topic)


async def test_concurrent_updates_are_applied_one_after_the_other_none_lost(cluster: InProcessCluster) -> None:
    controller = (await cluster.wait_for_controller()).controller
    await controller.create_topic(NewTopic(name="shared", partitions_count=1, replication_factor=1))

    def setting(name: str):
        def update(topic: TopicRecord) -> TopicRecord:
            return topic.model_copy(update={"configs": {**topic.configs, name: "1"}})

        return update

    names = [f"config.{i}" for i in range(8)]
    results = await asyncio.gather(*(controller.update_topic("shared", setting(name)) for name in names))
    final, revision = await _topic(cluster, "shared")
    assert final.configs == dict.fromkeys(names, "1")
    assert max(results, key=lambda result: result[1]) == (final, revision)
    assert len({written for _, written in results}) == len(names), "each update is its own write"


async def test_only_the_active_controller_changes_topics(cluster: InProcessCluster) -> None:
    active = await cluster.wait_for_controller()
    await active.controller.create_topic(NewTopic(name="guarded", partitions_count=1, replication_factor=1))
    other = next(broker for broker in cluster.brokers.values() if broker is not active)
    with pytest.raises(NotController):
        await other.controller.create_partitions("guarded", 2)
    with pytest.raises(NotController):
        await other.controller.update_topic("guarded", lambda topic: topic)
