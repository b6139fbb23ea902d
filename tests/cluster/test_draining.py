"""The controller drains a broker (marks it, moves every replica off it) and balances over the others,
against the real sqlite store: a drained broker gets no new replica until it is let back."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from broker.cluster.records import draining_key
from broker.errors import InvalidReplicationFactor, NotFound
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import InProcessCluster, start_cluster


@pytest.fixture
async def four(tmp_path: Path):
    cluster = await start_cluster(tmp_path, [1, 2, 3, 4])
    yield cluster
    await cluster.close()


async def test_draining_moves_every_replica_off_and_new_topics_avoid_the_broker(four: InProcessCluster) -> None:
    controller = (await four.wait_until_controller_sees({1, 2, 3, 4})).controller
    await controller.create_topic(
        NewTopic(name="held", partitions_count=2, replication_factor=2, assignment=[[1, 2], [3, 1]])
    )
    records, warnings = await controller.drain_broker(1)
    assert warnings == []
    assert [(r.partition, r.adding_replicas, r.removing_replicas) for r in records] == [(0, [4], [1]), (1, [2], [1])]
    assert await four.observer.get(draining_key(1)) is not None

    await controller.create_topic(NewTopic(name="fresh", partitions_count=6, replication_factor=3))
    assert all(1 not in r.replicas for r in await four.partitions("fresh")), "a drained broker took a new replica"
    await controller.create_partitions("fresh", 8)
    assert all(1 not in r.replicas for r in await four.partitions("fresh"))

    records, _ = await controller.balance_brokers(0.0, 100)
    assert all(1 not in r.adding_replicas for r in records), "balancing moved a replica onto the drained broker"

    assert await controller.undrain_broker(1)
    assert await four.observer.get(draining_key(1)) is None
    assert not await controller.undrain_broker(1)


async def test_too_few_brokers_that_take_replicas_is_refused_naming_the_drained_ones(four: InProcessCluster) -> None:
    controller = (await four.wait_until_controller_sees({1, 2, 3, 4})).controller
    await controller.drain_broker(3)
    await controller.drain_broker(4)
    with pytest.raises(InvalidReplicationFactor, match=r"brokers \[3, 4\] are being drained"):
        await controller.create_topic(NewTopic(name="wide", partitions_count=1, replication_factor=3))


async def test_a_broker_nobody_knows_cannot_be_drained(four: InProcessCluster) -> None:
    controller = (await four.wait_until_controller_sees({1, 2, 3, 4})).controller
    with pytest.raises(NotFound, match="broker 9 is neither registered nor holds a replica"):
        await controller.drain_broker(9)
    assert await four.observer.get(draining_key(9)) is None


async def test_balancing_evens_out_preferred_leaders_once_replica_counts_are_even(four: InProcessCluster) -> None:
    """Replicas are even over 2, 3 and 4 (1 is drained), but 4 leads four of six partitions: a step reorders
    two partitions' replicas, moving no data, and elects their new first replicas."""
    controller = (await four.wait_until_controller_sees({1, 2, 3, 4})).controller
    assert await controller.drain_broker(1) == ([], [])
    assignment = [[4, 2], [4, 3], [4, 2], [4, 3], [2, 3], [3, 2]]
    await controller.create_topic(
        NewTopic(name="skewed", partitions_count=6, replication_factor=2, assignment=assignment)
    )
    records, _ = await controller.balance_brokers(0.1, 10)
    assert [(r.partition, r.replicas, r.leader) for r in records] == [(0, [2, 4], 2), (1, [3, 4], 3)]
    assert all(not r.adding_replicas and not r.removing_replicas for r in records), "a reorder copies nothing"
    leaders = Counter(r.leader for r in await four.partitions("skewed"))
    assert leaders == {2: 2, 3: 2, 4: 2}
    assert await controller.balance_brokers(0.1, 10) == ([], [])


async def test_a_broker_drains_while_another_replica_of_its_partitions_is_down(four: InProcessCluster) -> None:
    """The down replica stays in the target (nothing moves to it); the copy to a live broker starts at once."""
    controller_id = (await four.wait_until_controller_sees({1, 2, 3, 4})).broker_id
    dead = max({2, 3, 4} - {controller_id})
    drained = min({1, 2, 3, 4} - {controller_id, dead})
    controller = four.brokers[controller_id].controller
    await controller.create_topic(
        NewTopic(name="half-down", partitions_count=1, replication_factor=2, assignment=[[drained, dead]])
    )
    await four.kill(dead)
    await four.wait_until_controller_sees({1, 2, 3, 4} - {dead}, timeout_s=15.0)
    [record], _ = await controller.drain_broker(drained)
    assert record.removing_replicas == [drained] and dead in record.replicas
    assert [b for b in record.adding_replicas if b in {drained, dead}] == []
    assert (await four.partitions("half-down"))[0].adding_replicas == record.adding_replicas
