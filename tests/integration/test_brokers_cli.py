"""The operator's path on real brokers: add a broker, ``brokers balance`` onto it, ``brokers drain`` one, stop it.

Through the CLI as an operator types it (in this process, against the cluster's
processes), under acks=all load: no acknowledged record is lost while replicas move,
and a drained broker holds no replica, so stopping it takes nothing away.
"""

from __future__ import annotations

import json

import pytest

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture
from tests.support.replication import read_all
from tests.support.replication_load import BackgroundConsumer, BackgroundProducer

pytestmark = pytest.mark.integration

cluster = cluster_fixture(ClusterSpec(), scope="module")


def _replicas_per_broker(cluster: Cluster, topic: str) -> dict[int, int]:
    counts: dict[int, int] = {}
    for state in cluster.partitions(topic, via=2).values():
        for broker in state.replicas:
            counts[broker] = counts.get(broker, 0) + 1
    return counts


def test_balance_onto_an_added_broker_then_drain_one_and_stop_it_losing_nothing(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-load"
    cluster.create_topic(topic, partitions=6, replication_factor=2)
    added = cluster.extra_broker(4, "added").start()
    cluster.wait_until(lambda: cluster.registered_ids() == {1, 2, 3, 4}, "broker 4 registered")
    producer = BackgroundProducer(cluster, topic).start()
    consumer = BackgroundConsumer(cluster, topic).start()
    cluster.wait_until(lambda: len(producer.acknowledged) >= 50, "records before the moves")

    listed = cluster.cli(["brokers", "list"], env=cluster.cli_env(via=2))
    assert added.url in listed, listed
    balanced = cluster.cli(["brokers", "balance", "--tolerance", "0"], env=cluster.cli_env(via=2))
    assert "balanced after" in balanced, balanced
    even = {1: 3, 2: 3, 3: 3, 4: 3}
    cluster.wait_until(lambda: _replicas_per_broker(cluster, topic) == even, f"{even} as the leaders describe it")

    drained = cluster.cli(["brokers", "drain", "1"], env=cluster.cli_env(via=2))
    assert "broker 1 holds no replica and leads nothing: it may be stopped" in drained, drained
    cluster.wait_until(
        lambda: all(1 not in s.replicas and s.leader_id != 1 for s in cluster.partitions(topic, via=2).values()),
        "no partition on broker 1 as the leaders describe it",
    )
    listed = cluster.cli(["brokers", "list"], env=cluster.cli_env(via=2))
    rows = {
        url: line for line in listed.splitlines() for url in (b.url for b in cluster.brokers.values()) if url in line
    }
    assert "draining" in rows[cluster.brokers[1].url] and "draining" not in rows[cluster.brokers[2].url], listed
    fresh = cluster.create_topic(f"{prefix}-after-drain", partitions=1, replication_factor=3)[0]
    assert sorted(fresh.replicas) == [2, 3, 4], "a broker being drained got a new replica"
    cluster.brokers[1].stop()
    seen = len(producer.acknowledged)
    cluster.wait_until(lambda: len(producer.acknowledged) >= seen + 50, "records after broker 1 stopped")
    producer.stop()
    cluster.wait_until(lambda: consumer.position > producer.acknowledged[-1].offset, "the reader to catch up")
    consumer.stop()
    assert consumer.violations == [], consumer.violations[:5]
    read = [value for _, value in read_all(cluster, topic, 0, via=2)]
    assert len(read) == len(set(read))
    assert not [ack.value for ack in producer.acknowledged if ack.value not in set(read)]
    undrained = cluster.cli(["brokers", "undrain", "1"], env=cluster.cli_env(via=2))
    assert "broker 1 takes new replicas again" in undrained, undrained
    added.stop()


def test_a_plan_file_executes_verifies_and_a_generated_plan_covers_the_topic(
    cluster: Cluster, prefix: str, tmp_path
) -> None:
    topic = f"{prefix}-planned"
    via = next(iter(sorted(cluster.live_ids())))
    env = cluster.cli_env(via=via)
    brokers = sorted(cluster.live_ids())
    cluster.create_topic(topic, partitions=2, replication_factor=2, via=via)
    plan = tmp_path / "plan.json"
    target = [brokers[-1], brokers[0]]
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": target}]}))
    executed = cluster.cli(["partitions", "reassign", "--plan", str(plan)], env=env)
    assert "moving 1 partition(s)" in executed, executed
    verified = cluster.cli(["partitions", "reassign", "--verify", "--plan", str(plan)], env=env)
    assert "complete" in verified, verified
    cluster.wait_until(lambda: cluster.partitions(topic, via=via)[0].replicas == target, f"{topic}-0 on {target}")
    generated = json.loads(
        cluster.cli(
            ["partitions", "reassign", "--generate", "--brokers", ",".join(map(str, brokers)), "--topic", topic],
            env=env,
        )
    )
    assert generated["version"] == 1
    assert all(set(entry["replicas"]) <= set(brokers) for entry in generated["partitions"])
    assert cluster.cli(["partitions", "reassignments"], env=env).strip() == "no partition is moving"
