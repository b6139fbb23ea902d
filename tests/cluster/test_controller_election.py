"""Exactly one controller, failover on lease expiry, fencing of a deposed controller."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path

import pytest

from broker.cluster.controller_fence import ControllerFence
from broker.cluster.controller_term import ControllerSettings, ControllerTerm
from broker.cluster.records import CONTROLLER_KEY, broker_key, partition_key, topic_key
from broker.errors import NotController
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import (
    FAILOVER_MARGIN_MS,
    SESSION_TIMEOUT_MS,
    InProcessCluster,
)
from tests.support.waiting import wait_until_async


async def test_exactly_one_controller_and_everybody_knows_it(cluster: InProcessCluster) -> None:
    for _ in range(20):
        assert [b.broker_id for b in cluster.active_controllers()] == [1]
        await asyncio.sleep(0.02)
    controller_kv = await cluster.observer.get(CONTROLLER_KEY)
    assert controller_kv is not None and json.loads(controller_kv.value) == {"broker_id": 1}

    async def all_agree() -> bool:
        return all(
            (b.controller.controller_id, b.controller.controller_epoch) == (1, controller_kv.mod_revision)
            for b in cluster.brokers.values()
        )

    await wait_until_async(all_agree, "every broker to know the controller and its epoch", 2.0)


async def test_operations_on_a_non_controller_raise_not_controller(cluster: InProcessCluster) -> None:
    with pytest.raises(NotController, match="the controller is broker 1"):
        await cluster.brokers[2].controller.create_topic(NewTopic(name="t", partitions_count=1, replication_factor=1))


async def test_controller_failover_after_its_process_dies(cluster: InProcessCluster) -> None:
    """The new controller's epoch (its key's revision) comes after the revision that expired the old lease.

    Revisions, not clocks: how long before the kill the old broker last renewed its lease
    depends on how busy the machine was, so a failover time measured from the kill has no
    lower bound a loaded machine keeps; the order of the store's revisions does.
    """
    old_epoch = cluster.brokers[1].controller.controller_epoch
    _, before_kill = await cluster.observer.list(broker_key(1))
    killed_at = time.monotonic()
    await cluster.kill(1)
    new_controller = await cluster.wait_for_controller(timeout_s=(SESSION_TIMEOUT_MS + FAILOVER_MARGIN_MS) / 1000)
    failover_ms = (time.monotonic() - killed_at) * 1000
    print(f"controller failover: {failover_ms:.0f} ms (session timeout {SESSION_TIMEOUT_MS} ms)")
    assert new_controller.broker_id in (2, 3)
    new_epoch = new_controller.controller.controller_epoch
    assert new_epoch > old_epoch
    expired_at = await _deletion_revision(cluster, broker_key(1), before_kill + 1)
    assert new_epoch > expired_at, "a new controller was elected before the old lease expired"


async def _deletion_revision(cluster: InProcessCluster, key: str, from_revision: int) -> int:
    events = cluster.observer.watch(key, from_revision)
    async with asyncio.timeout(5), contextlib.aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if event.key == key and event.type == "delete":
                return event.mod_revision
    raise AssertionError(f"{key} was never deleted")


async def test_clean_deregistration_hands_over_at_once(cluster: InProcessCluster) -> None:
    leaving = cluster.brokers.pop(1)
    started = time.monotonic()
    await leaving.controller.close()
    await leaving.membership.deregister()
    await cluster.wait_for_controller(timeout_s=1.0)
    assert time.monotonic() - started < SESSION_TIMEOUT_MS / 1000
    await leaving.store.close()


async def test_a_deposed_controllers_writes_fail(cluster: InProcessCluster) -> None:
    await cluster.brokers[1].controller.create_topic(NewTopic(name="fenced", partitions_count=1, replication_factor=3))
    old_term = cluster.brokers[1].controller.active_term()
    old_epoch = old_term.controller_epoch
    await cluster.kill(1)
    await cluster.wait_for_controller(timeout_s=3.0)

    with pytest.raises(NotController, match="no longer the controller"):
        await asyncio.wait_for(
            old_term.create_topic(NewTopic(name="written-by-deposed", partitions_count=1, replication_factor=1)), 5.0
        )
    stale_term = ControllerTerm(cluster.observer, 1, old_epoch, ControllerSettings())
    with pytest.raises(NotController):
        await asyncio.wait_for(stale_term.delete_topic("fenced"), 5.0)
    assert await cluster.observer.get(topic_key("fenced")) is not None
    assert await cluster.observer.get(topic_key("written-by-deposed")) is None

    record_kv = await cluster.observer.get(partition_key("fenced", 0))
    assert record_kv is not None
    stale_fence = ControllerFence(cluster.observer, 1, old_epoch)
    with pytest.raises(NotController):
        await asyncio.wait_for(stale_fence.put_if(record_kv.key, b"{}", record_kv.mod_revision), 5.0)
    unchanged = await cluster.observer.get(record_kv.key)
    assert unchanged is not None and unchanged.mod_revision == record_kv.mod_revision


async def test_a_fence_on_a_stale_record_revision_fails_without_writing(cluster: InProcessCluster) -> None:
    controller = cluster.brokers[1].controller
    await controller.create_topic(NewTopic(name="cas", partitions_count=1, replication_factor=3))
    fence = ControllerFence(cluster.observer, 1, controller.controller_epoch)
    key = partition_key("cas", 0)
    current = await cluster.observer.get(key)
    assert current is not None
    assert await fence.put_if(key, b"stale decision", current.mod_revision - 1) is None
    after = await cluster.observer.get(key)
    assert after is not None and after.value == current.value


async def test_controller_that_lost_its_lease_steps_down_and_rejoins(cluster: InProcessCluster) -> None:
    broker = cluster.brokers[1]
    old_lease = broker.membership.lease
    old_broker_epoch = broker.membership.broker_epoch
    assert old_lease is not None
    await cluster.observer.revoke(old_lease.id)

    async def re_registered() -> bool:
        lease = broker.membership.lease
        return lease is not None and lease.id != old_lease.id

    await wait_until_async(re_registered, "broker 1 to re-register after losing its lease", 3.0)
    assert broker.membership.broker_epoch > old_broker_epoch
    new_controller = await cluster.wait_for_controller(timeout_s=3.0)
    assert new_controller.controller.controller_epoch > old_broker_epoch

    async def broker_1_listed_again() -> bool:
        return 1 in new_controller.membership.live_brokers()

    await wait_until_async(broker_1_listed_again, "broker 1 back in the live broker view", 2.0)


async def test_only_one_of_many_simultaneous_campaigners_wins(tmp_path: Path) -> None:
    from broker.cluster.store_url import open_store
    from tests.cluster.harness import InProcessCluster as Cluster

    url = f"sqlite://{tmp_path / 'metadata.db'}"
    cluster = Cluster(url, await open_store(url))
    try:
        await asyncio.gather(*(cluster.start_broker(broker_id) for broker_id in range(1, 6)))
        winner = await cluster.wait_for_controller()
        await asyncio.sleep(0.3)
        assert [b.broker_id for b in cluster.active_controllers()] == [winner.broker_id]
    finally:
        await cluster.close()
