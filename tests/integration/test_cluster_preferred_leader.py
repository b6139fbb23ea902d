"""Preferred leadership returns to ``replicas[0]`` after its broker comes back.

A restarted broker is a follower of everything at first: its leaderships moved away
while it was gone. ``highwater partitions elect-preferred`` (the REST route
``POST /v3/clusters/{c}/partitions:elect-preferred``) gives them back once it is in
sync, and so does the controller's periodic rebalance
(``leader_imbalance_check_interval_ms``) without anybody asking. The tests of the
manual path keep the periodic one off (the harness's ``auto_leader_rebalance_enable=false``),
so what they see is the manual call's doing.
"""

from __future__ import annotations

from typing import Literal

import pytest

from tests.support.cli import run_cli
from tests.support.cluster import Cluster, Clusters, ClusterSpec

pytestmark = pytest.mark.integration

Store = Literal["sqlite", "etcd"]
STORES: list[Store] = ["sqlite", "etcd"]
TOPIC = "preferred"
PARTITIONS = 6
CHECK_INTERVAL_MS = 1000


def manual_only(store: Store = "sqlite") -> ClusterSpec:
    """The harness's default: only elections the test asks for."""
    return ClusterSpec(store=store)


def automatic(store: Store) -> ClusterSpec:
    """The controller checks for imbalance every ``CHECK_INTERVAL_MS`` and moves leaderships back."""
    return ClusterSpec(
        store=store,
        settings={"auto_leader_rebalance_enable": True, "leader_imbalance_check_interval_ms": CHECK_INTERVAL_MS},
    )


def bounce_a_preferred_leader(cluster: Cluster) -> tuple[int, dict[int, int]]:
    """Stop and restart a non-controller broker, returning once it is back in every ISR (and
    so could lead again); return it and the leader epochs of the partitions it prefers from
    before it stopped. Any leadership it holds later came back through a new election, so
    its epoch is higher, however early an automatic rebalance ran."""
    broker_id = min(set(cluster.brokers) - {cluster.controller_id()})
    states = cluster.partitions(TOPIC)
    preferred = {p for p, s in states.items() if s.replicas[0] == broker_id}
    assert preferred and cluster.led_by(TOPIC, broker_id).keys() == preferred
    epochs_before = {p: states[p].leader_epoch for p in preferred}
    assert cluster.brokers[broker_id].stop() == 0
    cluster.restart(broker_id)
    cluster.wait_in_every_isr(TOPIC, broker_id)
    return broker_id, epochs_before


def assert_every_partition_led_by_its_first_replica(cluster: Cluster) -> None:
    for partition, state in cluster.partitions(TOPIC).items():
        assert state.leader_id == state.replicas[0], (partition, state)


@pytest.mark.parametrize("store", STORES)
def test_elect_preferred_command_gives_leadership_back(store: Store, clusters: Clusters) -> None:
    cluster = clusters.start(manual_only(store))
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    broker_id, epochs_before = bounce_a_preferred_leader(cluster)
    assert cluster.led_by(TOPIC, broker_id) == {}, "the restarted broker leads nothing until asked"
    other = min(set(cluster.brokers) - {broker_id, cluster.controller_id()})

    result = run_cli("partitions", "elect-preferred", "--topic", TOPIC, "--server", cluster.url(other))
    assert result.returncode == 0, result.stderr
    assert f"moved leadership of {len(epochs_before)} partition(s)" in result.stdout
    assert_every_partition_led_by_its_first_replica(cluster)
    for partition, state in cluster.led_by(TOPIC, broker_id).items():
        assert state.leader_epoch > epochs_before[partition]

    again = run_cli("partitions", "elect-preferred", "--server", cluster.url(broker_id))
    assert again.returncode == 0 and "every partition is led by its preferred replica" in again.stdout
    unknown = run_cli("partitions", "elect-preferred", "--topic", "nope", "--server", cluster.url(other))
    assert unknown.returncode == 1 and "UNKNOWN_TOPIC" in unknown.stderr


def test_elect_preferred_route_answers_the_elected_partitions(clusters: Clusters) -> None:
    cluster = clusters.start(manual_only())
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    broker_id, epochs_before = bounce_a_preferred_leader(cluster)
    status, body = cluster.v3("POST", "/partitions:elect-preferred", via=broker_id)
    assert status == 200, body
    elected = {e["partition_id"]: e for e in body["elected"]}
    assert elected.keys() == epochs_before.keys()
    for partition, entry in elected.items():
        assert (entry["topic_name"], entry["leader_id"]) == (TOPIC, broker_id)
        assert entry["leader_epoch"] == epochs_before[partition] + 2, "one election at the stop, this one back"
    assert cluster.v3("POST", "/partitions:elect-preferred", {})[1] == {"elected": []}


@pytest.mark.parametrize("store", STORES)
def test_automatic_rebalance_restores_preferred_leaders(store: Store, clusters: Clusters) -> None:
    """No manual call: once the restarted broker is back in every ISR, the controller's
    next check hands its partitions back."""
    cluster = clusters.start(automatic(store))
    cluster.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=3)
    broker_id, epochs_before = bounce_a_preferred_leader(cluster)

    def leads_its_preferred_partitions() -> bool:
        return cluster.led_by(TOPIC, broker_id).keys() == epochs_before.keys()

    cluster.wait_until(leads_its_preferred_partitions, f"broker {broker_id} to lead its preferred partitions again")
    assert_every_partition_led_by_its_first_replica(cluster)
    for partition, state in cluster.led_by(TOPIC, broker_id).items():
        assert state.leader_epoch > epochs_before[partition]
