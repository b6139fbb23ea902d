"""Five brokers on five hosts (etcd on the first three), two hosts cut off at once.

With three replicas of each partition spread over five brokers, losing two hosts leaves
each partition one, two or three replicas. acks=all with ``min.insync.replicas`` 2 keeps
exactly Kafka's promise: a partition that kept two replicas elects a leader among them
(if it lost its own) and takes writes again once its ISR has shrunk; a partition that
kept one refuses acks=all writes (NOT_ENOUGH_REPLICAS) rather than acknowledge a single
copy, and takes them again once a host returns. etcd's members are on the hosts that
stay, so no lease there is at risk. Once both hosts return, every ISR fills up again,
and the chaos checker finds nothing acknowledged lost.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.chaos.checker import summary_table
from tests.chaos.history import History
from tests.hosts.checked_load import CheckedLoad, acked_per_partition, wait_for_partitions, wait_in_sync
from tests.hosts.deployment import HOSTS, SPARE_HOSTS, HostsDeployment

BROKERS = HOSTS + SPARE_HOSTS
CUT = (4, 5)
PARTITIONS = 10
WAIT_S = 40.0


@pytest.fixture
def brokers() -> int:
    return BROKERS


async def _until_each_takes_a_write(
    history: History, topic: str, since_s: float, partitions: set[int]
) -> dict[int, int]:
    """Acknowledged writes per partition since ``since_s``, once each of ``partitions`` has one."""
    deadline = time.monotonic() + WAIT_S
    while True:
        acked = acked_per_partition(history, topic, PARTITIONS, since_s)
        if all(acked[p] > 0 for p in partitions):
            return acked
        assert time.monotonic() < deadline, f"a partition with two replicas left took no write: {acked}"
        await asyncio.sleep(0.1)


async def test_five_brokers_losing_two_hosts_keep_every_partition_with_two_replicas_writable(
    deployment: HostsDeployment,
) -> None:
    topic = "five"
    await deployment.create_topic(topic, PARTITIONS)
    states = await wait_in_sync(deployment, 1, topic)
    survivors = {p: set(state.replicas) - set(CUT) for p, state in enumerate(states)}
    assert {len(left) for left in survivors.values()} >= {2}, f"no partition keeps two replicas: {survivors}"
    load = CheckedLoad(deployment, topic, PARTITIONS, via=1).start()
    try:
        # Not a wait for a condition: the workload's history before the cut.
        await asyncio.sleep(1.0)
        for node_id in CUT:
            deployment.host(node_id).cut()
        await asyncio.to_thread(
            wait_for_partitions,
            deployment,
            1,
            topic,
            lambda s: s.leader_id not in CUT and not set(s.isr) & set(CUT),
            f"led and in sync without brokers {list(CUT)}",
            WAIT_S,
        )
        shrunk_at = time.monotonic()
        writable = {p for p, left in survivors.items() if len(left) >= 2}
        acked = await _until_each_takes_a_write(load.history, topic, shrunk_at, writable)
        for node_id in CUT:
            deployment.host(node_id).reconnect()
        await wait_in_sync(deployment, 1, topic, "in sync again")
    except BaseException:
        await load.stop()
        raise
    report = await load.finish()
    print(
        f"five brokers, hosts {list(CUT)} cut: acknowledged per partition once the ISRs shrank {acked}; "
        f"partitions left one replica: {sorted(set(survivors) - writable)}"
    )
    print(summary_table([report]))
    assert all(acked[p] == 0 for p in set(survivors) - writable), f"a single copy acknowledged acks=all: {acked}"
    assert report.ok, report.violations
