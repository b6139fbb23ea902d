"""The host tier, short: highwater on three hosts (network namespaces), one etcd member and
one broker on each, reached by the test process as a client host of its own.

- a topic replicated across the hosts takes acks=all writes, and each broker serves them;
- a host cut off from everyone (its broker and its etcd member) under acks=all load: the
  others elect new leaders and keep their leases (etcd's quorum is on their side; a
  keep-alive sent to host 1's member moves on to another member in time), and the cut
  broker registers again and rejoins every ISR once its cable is back; the chaos checker
  finds nothing acknowledged lost and nothing read taken back;
- a broker stopped while its host is cut off exits cleanly within its bounds.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from broker.client.admin import AdminClient
from broker.client.http import ClusterClient
from broker.client.types import TopicPartition
from broker.cluster.records import broker_key
from broker.cluster.store_url import open_store
from broker.storage.log_manager import partition_directory_name
from consumer import Consumer
from producer import Producer
from tests.chaos.checker import check_topic, summary_table
from tests.chaos.cluster import PartitionState, batches_below, partition_state
from tests.chaos.history import UNKNOWN, History
from tests.chaos.workload import ProducerWriter, Reader, SingleRequestWriter, read_final_log
from tests.hosts.deployment import POLL_S, HostsDeployment
from tests.hosts.network import HostNetwork
from tests.support.waiting import wait_until

HOSTS = 3
PARTITIONS = 3
SETTINGS = {"log_level": "info"}
STOP_TIMEOUT_S = 40.0
"""The controlled shutdown's 15 s and one 6 s session for the deregistration, with room to spare."""
CUT_TIMEOUT_S = 40.0
"""Leadership moves once the cut broker's lease (6 s) runs out; rejoining takes a fetch round and an ISR change."""


@pytest.fixture(scope="module")
def network() -> Iterator[HostNetwork]:
    with HostNetwork(HOSTS) as made:
        yield made


@pytest.fixture
def deployment(network: HostNetwork, tmp_path: Path) -> Iterator[HostsDeployment]:
    deployment = HostsDeployment(network, tmp_path, SETTINGS)
    try:
        yield deployment.start()
    finally:
        for host in network.hosts:
            host.reconnect()
            host.kill_all()


def _states(deployment: HostsDeployment, via: int, topic: str) -> list[PartitionState] | None:
    rows = deployment.v3(via, f"/topics/{topic}/partitions")
    return None if rows is None else [partition_state(row) for row in rows]


def _wait_for_partitions(
    deployment: HostsDeployment,
    via: int,
    topic: str,
    holds: Callable[[PartitionState], bool],
    what: str,
    timeout_s: float,
) -> list[PartitionState]:
    def reached() -> list[PartitionState] | None:
        states = _states(deployment, via, topic)
        return states if states and all(holds(state) for state in states) else None

    return wait_until(reached, f"every partition of {topic} {what} (asked broker {via})", timeout_s, POLL_S)


async def _create_topic(deployment: HostsDeployment, topic: str) -> None:
    client = ClusterClient(deployment.urls)
    try:
        await AdminClient(client).create_topic(topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
    finally:
        await client.close()


def _replica_bytes(deployment: HostsDeployment, node_id: int, topic: str, partition: int, high_watermark: int) -> bytes:
    """The batches below ``high_watermark`` in broker ``node_id``'s segment files, read while it runs (settled)."""
    directory = deployment.data_dir(node_id) / partition_directory_name(topic, partition)
    return batches_below(b"".join(path.read_bytes() for path in sorted(directory.glob("*.log"))), high_watermark)


async def _broker_epochs(deployment: HostsDeployment, node_ids: list[int]) -> dict[int, int | None]:
    """Each broker's epoch (its registration's revision) as etcd holds it; None when not registered."""
    store = await open_store(deployment.metadata_store)
    try:
        registrations = {node_id: await store.get(broker_key(node_id)) for node_id in node_ids}
    finally:
        await store.close()
    return {node_id: kv.mod_revision if kv is not None else None for node_id, kv in registrations.items()}


async def test_a_topic_across_three_hosts_takes_acks_all_writes_that_every_broker_serves(
    deployment: HostsDeployment,
) -> None:
    await _create_topic(deployment, "spread")
    values = [f"v{i}".encode() for i in range(300)]
    producer = Producer(deployment.urls, acks="all")
    await producer.start()
    try:
        for value in values:
            await producer.send("spread", value, partition=int(value[1:]) % PARTITIONS)
        await producer.flush()
    finally:
        await producer.close()
    for node_id in range(1, HOSTS + 1):
        consumer = Consumer([deployment.url(node_id)], auto_offset_reset="earliest", fetch_max_wait_ms=100)
        consumer.assign([TopicPartition("spread", p) for p in range(PARTITIONS)])
        seen: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                while len(seen) < len(values):
                    for records in (await consumer.getmany(timeout_ms=200)).values():
                        seen += [record.value for record in records if record.value is not None]
        finally:
            await consumer.close()
        assert sorted(seen) == sorted(values), f"broker {node_id} served {len(seen)} of {len(values)}"
    brokers = deployment.v3(1, "/brokers")
    assert brokers is not None
    assert {int(row["broker_id"]): row["rack"] for row in brokers} == {
        1: "host-1",
        2: "host-2",
        3: "host-3",
    }


async def test_a_host_cut_off_loses_its_leaderships_and_rejoins_every_isr_once_reconnected(
    deployment: HostsDeployment,
) -> None:
    topic = "cut"
    await _create_topic(deployment, topic)
    await asyncio.to_thread(
        _wait_for_partitions, deployment, 2, topic, lambda s: len(s.isr) == 3, "in sync", CUT_TIMEOUT_S
    )
    history = History()
    stop_writers, stop_readers = asyncio.Event(), asyncio.Event()
    writers: list[ProducerWriter | SingleRequestWriter] = [
        ProducerWriter("p0", deployment.urls, topic, PARTITIONS, "all", history),
        SingleRequestWriter("s0", deployment.urls, topic, PARTITIONS, history),
    ]
    readers = [Reader("r0", deployment.urls, topic, PARTITIONS, history)]
    writer_tasks = [asyncio.create_task(writer.run(stop_writers)) for writer in writers]
    reader_tasks = [asyncio.create_task(reader.run(stop_readers)) for reader in readers]
    cut = deployment.host(1)
    survivors_before = await _broker_epochs(deployment, [2, 3])
    try:
        # Not a wait for a condition: the workload's history before the cut.
        await asyncio.sleep(1.0)
        cut_at = time.monotonic()
        cut.cut()
        await asyncio.to_thread(
            _wait_for_partitions,
            deployment,
            2,
            topic,
            lambda s: s.leader_id in (2, 3) and 1 not in s.isr,
            "led by a broker on another host, without broker 1 in its ISR",
            CUT_TIMEOUT_S,
        )
        new_leaders_s = time.monotonic() - cut_at
        reconnected_at = time.monotonic()
        cut.reconnect()
        await asyncio.to_thread(
            _wait_for_partitions, deployment, 2, topic, lambda s: len(s.isr) == 3, "in sync again", CUT_TIMEOUT_S
        )
        rejoined_s = time.monotonic() - reconnected_at
        await asyncio.to_thread(deployment.wait_for_brokers, {1, 2, 3}, {1, 2, 3})
        assert await _broker_epochs(deployment, [2, 3]) == survivors_before, (
            "a broker on another host lost its lease while host 1 (and its etcd member) was cut off"
        )
    finally:
        cut.reconnect()
        stop_writers.set()
        await asyncio.gather(*writer_tasks, return_exceptions=True)
    settled = await asyncio.to_thread(
        _wait_for_partitions, deployment, 2, topic, lambda s: s.settled, "settled", CUT_TIMEOUT_S
    )
    stop_readers.set()
    await asyncio.gather(*reader_tasks, return_exceptions=True)
    for op in history.writes:
        if op.outcome is None:
            op.complete(UNKNOWN, error="never completed")
    high_watermarks = [state.high_watermark for state in settled]
    final_log = await read_final_log(deployment.urls, topic, high_watermarks)
    replica_bytes = {
        partition: {
            node_id: _replica_bytes(deployment, node_id, topic, partition, hw) for node_id in range(1, HOSTS + 1)
        }
        for partition, hw in enumerate(high_watermarks)
    }
    report = check_topic(history, topic, final_log, replica_bytes, durable=True)
    print(f"host 1 cut: new leaders after {new_leaders_s:.2f} s; every ISR full {rejoined_s:.2f} s after the return")
    print(summary_table([report]))
    assert report.counts["acked"] > 0, "the workload wrote nothing"
    assert report.ok, report.violations


def test_a_broker_stopped_while_its_host_is_cut_off_exits_cleanly(deployment: HostsDeployment) -> None:
    """SIGTERM to a broker that reaches neither its peers nor a quorum of etcd: its controlled
    shutdown and its deregistration each give up after their bounds (15 s, one 6 s session),
    and it exits 0 without a traceback instead of retrying until the link returns."""
    broker = deployment.brokers[1]
    deployment.host(1).cut()
    stopped_at = time.monotonic()
    broker.send_signal(signal.SIGTERM)
    returncode = broker.wait(STOP_TIMEOUT_S)
    took_s = time.monotonic() - stopped_at
    log = deployment.log_tail(1, lines=400)
    print(f"broker 1 stopped while cut off: exited {returncode} after {took_s:.1f} s")
    assert returncode == 0, log
    assert "Traceback" not in log
    assert "broker.stopped" in log
