"""Topic creation, leadership moves on broker death, unclean election, controlled
shutdown and preferred leader election, against the real sqlite store."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest

from broker.cluster.controller_term import ControllerSettings
from broker.cluster.records import (
    NO_LEADER,
    PartitionRecord,
    TopicRecord,
    legacy_topic_id,
    new_topic_id,
    partition_key,
    topic_key,
)
from broker.errors import InvalidReplicationFactor, InvalidTopic, TopicAlreadyExists
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import (
    FAILOVER_MARGIN_MS,
    SESSION_TIMEOUT_MS,
    InProcessCluster,
    start_cluster,
)
from tests.support.waiting import wait_until_async

MOVE_TIMEOUT_S = (SESSION_TIMEOUT_MS + FAILOVER_MARGIN_MS) / 1000


async def wait_for_records(
    cluster: InProcessCluster, topic: str, predicate, what: str, timeout_s: float = MOVE_TIMEOUT_S
):
    async def probe() -> list[PartitionRecord] | None:
        records = await cluster.partitions(topic)
        return records if records and predicate(records) else None

    return await wait_until_async(probe, what, timeout_s)


async def test_topic_creation_spreads_leaders_and_writes_initial_records(cluster: InProcessCluster) -> None:
    controller = (await cluster.wait_for_controller()).controller
    created = await controller.create_topic(
        NewTopic(name="orders", partitions_count=6, replication_factor=2, configs={"retention.ms": "1000"})
    )
    stored = await cluster.partitions("orders")
    assert stored == created
    assert Counter(r.leader for r in stored) == {1: 2, 2: 2, 3: 2}
    for record in stored:
        assert record.leader == record.replicas[0] and record.isr == record.replicas
        assert len(set(record.replicas)) == 2
        assert (record.leader_epoch, record.partition_epoch) == (0, 0)
    topic_kv = await cluster.observer.get(topic_key("orders"))
    assert topic_kv is not None
    topic = TopicRecord.model_validate_json(topic_kv.value)
    assert (topic.partitions_count, topic.replication_factor, topic.configs) == (6, 2, {"retention.ms": "1000"})

    with pytest.raises(TopicAlreadyExists, match="topic 'orders' already exists"):
        await controller.create_topic(NewTopic(name="orders", partitions_count=1, replication_factor=1))
    with pytest.raises(InvalidReplicationFactor, match="replication factor 4 is larger than the 3 live brokers"):
        await controller.create_topic(NewTopic(name="too-wide", partitions_count=1, replication_factor=4))
    with pytest.raises(InvalidTopic):
        await controller.create_topic(NewTopic(name="bad/name", partitions_count=1, replication_factor=1))
    assert await cluster.observer.get(topic_key("too-wide")) is None


async def test_next_topic_starts_on_the_least_loaded_broker(cluster: InProcessCluster) -> None:
    controller = (await cluster.wait_for_controller()).controller
    await controller.create_topic(NewTopic(name="first", partitions_count=1, replication_factor=1))
    await controller.create_topic(NewTopic(name="second", partitions_count=1, replication_factor=1))
    await controller.create_topic(NewTopic(name="third", partitions_count=1, replication_factor=1))
    leaders = [(await cluster.partitions(name))[0].leader for name in ("first", "second", "third")]
    assert sorted(leaders) == [1, 2, 3]


async def test_rack_aware_placement_spans_racks(tmp_path: Path) -> None:
    cluster = await start_cluster(tmp_path, [1, 2, 3, 4], racks={1: "a", 2: "a", 3: "b", 4: "b"})
    try:
        records = await cluster.brokers[1].controller.create_topic(
            NewTopic(name="racked", partitions_count=4, replication_factor=2)
        )
        rack = {1: "a", 2: "a", 3: "b", 4: "b"}
        assert all({rack[b] for b in r.replicas} == {"a", "b"} for r in records)
    finally:
        await cluster.close()


async def test_delete_topic_removes_topic_and_partition_records(cluster: InProcessCluster) -> None:
    """...and a topic created again under the name is another topic: it has an id of its own (KIP-516)."""
    controller = cluster.brokers[1].controller
    await controller.create_topic(NewTopic(name="doomed", partitions_count=3, replication_factor=2))
    first = await cluster.observer.get(topic_key("doomed"))
    await controller.delete_topic("doomed")
    assert await cluster.observer.get(topic_key("doomed")) is None
    assert await cluster.partitions("doomed") == []
    await controller.create_topic(NewTopic(name="doomed", partitions_count=1, replication_factor=1))
    again = await cluster.observer.get(topic_key("doomed"))
    assert len(await cluster.partitions("doomed")) == 1
    assert first is not None and again is not None
    first_id = TopicRecord.model_validate_json(first.value).topic_id
    assert first_id != TopicRecord.model_validate_json(again.value).topic_id
    assert first_id != legacy_topic_id("doomed")


async def test_dead_brokers_leaderships_move_to_next_live_isr_member(cluster: InProcessCluster) -> None:
    before = await cluster.brokers[1].controller.create_topic(
        NewTopic(name="moves", partitions_count=3, replication_factor=3)
    )
    led_by_2 = next(r for r in before if r.leader == 2)
    killed_at = time.monotonic()
    await cluster.kill(2)
    after = await wait_for_records(
        cluster, "moves", lambda rs: all(r.leader != 2 and 2 not in r.isr for r in rs), "broker 2 to leave every ISR"
    )
    move_ms = (time.monotonic() - killed_at) * 1000
    print(f"leadership move after broker death: {move_ms:.0f} ms (session timeout {SESSION_TIMEOUT_MS} ms)")
    moved = after[led_by_2.partition]
    expected_leader = next(b for b in led_by_2.replicas if b != 2)
    assert moved.leader == expected_leader
    assert (moved.leader_epoch, moved.partition_epoch) == (1, 1)
    assert moved.isr == [b for b in led_by_2.isr if b != 2]
    for record in after:
        if record.partition != led_by_2.partition:
            assert record.leader == before[record.partition].leader
            assert (record.leader_epoch, record.partition_epoch) == (0, 1)


async def test_no_live_isr_member_means_no_leader_until_it_returns(cluster: InProcessCluster) -> None:
    records = await cluster.brokers[1].controller.create_topic(
        NewTopic(name="solo", partitions_count=3, replication_factor=1)
    )
    on_2 = next(r for r in records if r.replicas == [2])
    await cluster.kill(2)
    leaderless = await wait_for_records(
        cluster,
        "solo",
        lambda rs: rs[on_2.partition].leader == NO_LEADER,
        "the partition on broker 2 to lose its leader",
    )
    assert leaderless[on_2.partition].isr == [2]
    assert leaderless[on_2.partition].leader_epoch == 1
    untouched = [r for r in leaderless if r.partition != on_2.partition]
    assert all(r.partition_epoch == 0 for r in untouched)

    await cluster.start_broker(2)
    back = await wait_for_records(
        cluster, "solo", lambda rs: rs[on_2.partition].leader == 2, "broker 2 to lead again", timeout_s=3.0
    )
    assert back[on_2.partition].isr == [2] and back[on_2.partition].leader_epoch == 2


async def _lose_both_replicas_then_restart_the_follower(
    cluster: InProcessCluster, configs: dict[str, str]
) -> tuple[PartitionRecord, PartitionRecord]:
    records = await cluster.brokers[1].controller.create_topic(
        NewTopic(name="risky", partitions_count=3, replication_factor=2, configs=configs)
    )
    target = next(r for r in records if 1 not in r.replicas)
    first, follower = target.replicas
    await cluster.kill(follower)
    await wait_for_records(cluster, "risky", lambda rs: rs[target.partition].isr == [first], "ISR to shrink")
    await cluster.kill(first)
    await wait_for_records(cluster, "risky", lambda rs: rs[target.partition].leader == NO_LEADER, "leader -1")
    await cluster.start_broker(follower)
    await cluster.wait_until_controller_sees({1, follower}, timeout_s=3.0)
    return target, (await cluster.partitions("risky"))[target.partition]


async def test_unclean_election_when_enabled_picks_the_out_of_sync_replica(cluster: InProcessCluster) -> None:
    target, _ = await _lose_both_replicas_then_restart_the_follower(cluster, {"unclean.leader.election.enable": "true"})
    follower = target.replicas[1]
    records = await wait_for_records(
        cluster, "risky", lambda rs: rs[target.partition].leader == follower, "unclean election of the follower"
    )
    assert records[target.partition].isr == [follower]
    assert records[target.partition].leader_epoch == 2


async def test_without_unclean_election_an_out_of_sync_replica_never_leads(cluster: InProcessCluster) -> None:
    target, _ = await _lose_both_replicas_then_restart_the_follower(cluster, {})
    await asyncio.sleep(0.3)
    now = (await cluster.partitions("risky"))[target.partition]
    assert now.leader == NO_LEADER and now.isr == [target.replicas[0]]


async def test_controlled_shutdown_moves_leaderships_before_returning(cluster: InProcessCluster) -> None:
    controller = cluster.brokers[1].controller
    before = await controller.create_topic(NewTopic(name="graceful", partitions_count=3, replication_factor=3))
    started = time.monotonic()
    changed = await controller.controlled_shutdown(3)
    shutdown_ms = (time.monotonic() - started) * 1000
    print(f"controlled shutdown moved {len(changed)} partitions in {shutdown_ms:.0f} ms")
    after = await cluster.partitions("graceful")
    assert len(changed) == 3
    assert all(r.leader != 3 and 3 not in r.isr for r in after)
    led_by_3 = next(r for r in before if r.leader == 3)
    assert after[led_by_3.partition].leader_epoch == 1

    leaving = cluster.brokers.pop(3)
    await leaving.controller.close()
    await leaving.membership.deregister()
    await leaving.store.close()
    await cluster.wait_until_controller_sees({1, 2})
    assert await cluster.partitions("graceful") == after


async def test_controlled_shutdown_of_the_controller_itself(cluster: InProcessCluster) -> None:
    await cluster.brokers[1].controller.create_topic(NewTopic(name="self", partitions_count=3, replication_factor=2))
    await cluster.brokers[1].shutdown(cluster.brokers[1].controller)
    del cluster.brokers[1]
    successor = await cluster.wait_for_controller(timeout_s=1.0)
    assert successor.broker_id in (2, 3)
    assert all(r.leader != 1 and 1 not in r.isr for r in await cluster.partitions("self"))


async def _rejoin_with_isr_restored(cluster: InProcessCluster, topic: str) -> PartitionRecord:
    """Kill broker 2, let leadership move, restart it, and re-add it to the ISR the
    way its partition leader would (a CAS on the record, bumping partition_epoch)."""
    records = await cluster.brokers[1].controller.create_topic(
        NewTopic(name=topic, partitions_count=3, replication_factor=3)
    )
    preferred_2 = next(r for r in records if r.replicas[0] == 2)
    await cluster.kill(2)
    await wait_for_records(cluster, topic, lambda rs: rs[preferred_2.partition].leader != 2, "leadership to move")
    await cluster.start_broker(2)
    await cluster.wait_until_controller_sees({1, 2, 3}, timeout_s=3.0)
    key = partition_key(topic, preferred_2.partition)
    current = await cluster.observer.get(key)
    assert current is not None
    record = PartitionRecord.model_validate_json(current.value)
    expanded = record.model_copy(
        update={
            "isr": [b for b in record.replicas if b in {*record.isr, 2}],
            "partition_epoch": record.partition_epoch + 1,
        }
    )
    assert await cluster.observer.put_if(key, expanded.model_dump_json().encode(), current.mod_revision) is not None
    return expanded


async def test_preferred_leader_election_restores_first_replica(cluster: InProcessCluster) -> None:
    expanded = await _rejoin_with_isr_restored(cluster, "prefer")
    assert expanded.leader != 2
    changed = await cluster.brokers[1].controller.elect_preferred_leaders("prefer")
    assert [(r.partition, r.leader) for r in changed] == [(expanded.partition, 2)]
    restored = (await cluster.partitions("prefer"))[expanded.partition]
    assert restored.leader == 2 and restored.leader_epoch == expanded.leader_epoch + 1
    assert await cluster.brokers[1].controller.elect_preferred_leaders() == []


async def test_automatic_rebalance_restores_preferred_leaders(tmp_path: Path) -> None:
    settings = ControllerSettings(auto_leader_rebalance_enable=True, leader_imbalance_check_interval_ms=200)
    cluster = await start_cluster(tmp_path, [1, 2, 3], settings)
    try:
        expanded = await _rejoin_with_isr_restored(cluster, "auto")
        await wait_for_records(
            cluster, "auto", lambda rs: rs[expanded.partition].leader == 2, "the periodic rebalance", timeout_s=2.0
        )
    finally:
        await cluster.close()


async def test_next_reconcile_completes_half_done_creation_and_deletion(cluster: InProcessCluster) -> None:
    """A controller that died between the topic record and its partitions (or, when
    deleting, after the topic record) leaves work its successor finishes."""
    half_created = TopicRecord(name="half", topic_id=new_topic_id(), partitions_count=2, replication_factor=2)
    await cluster.observer.put(topic_key("half"), half_created.model_dump_json().encode())
    orphan = PartitionRecord(
        topic="gone", partition=0, leader=1, leader_epoch=0, partition_epoch=0, replicas=[1], isr=[1]
    )
    await cluster.observer.put(partition_key("gone", 0), orphan.model_dump_json().encode())
    await cluster.start_broker(4)
    completed = await wait_for_records(cluster, "half", lambda rs: len(rs) == 2, "the missing partitions")
    assert all(len(r.replicas) == 2 and r.isr == r.replicas for r in completed)

    async def orphan_deleted() -> bool:
        """The same reconcile pass deletes it, before or after it completes "half": no order is promised."""
        return await cluster.observer.get(partition_key("gone", 0)) is None

    await wait_until_async(orphan_deleted, "the orphaned partition record to be deleted", MOVE_TIMEOUT_S)


async def test_a_leader_that_restarts_at_once_is_fenced_and_records_name_the_new_broker_epoch(
    cluster: InProcessCluster,
) -> None:
    """A restart inside one controller look (old lease revoked, new registration at once)
    must still move leadership or bump the epoch: the restarted log may lack its unflushed tail."""
    records = await cluster.brokers[1].controller.create_topic(
        NewTopic(name="restarts", partitions_count=3, replication_factor=3)
    )
    for record in records:
        assert record.leader_broker_epoch == cluster.brokers[record.leader].membership.broker_epoch
    led_by_2 = next(r for r in records if r.leader == 2)
    old = cluster.brokers.pop(2)
    lease = old.membership.lease
    assert lease is not None
    await old.kill()
    await cluster.observer.revoke(lease.id)
    restarted = await cluster.start_broker(2)

    def fenced(rs: list[PartitionRecord]) -> bool:
        moved = rs[led_by_2.partition]
        return moved.leader_epoch > led_by_2.leader_epoch and (
            moved.leader != 2 or moved.leader_broker_epoch == restarted.membership.broker_epoch
        )

    after = await wait_for_records(cluster, "restarts", fenced, "the restarted leader to be fenced")
    moved = after[led_by_2.partition]
    assert moved.leader_broker_epoch == cluster.brokers[moved.leader].membership.broker_epoch
