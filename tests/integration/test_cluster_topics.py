"""Topic placement, validation, deletion and leaderless partitions in a real cluster.

* Creation goes through the controller: replicas round-robin over the live brokers,
  leaders spread evenly (also across topics), a replication factor above the number
  of live brokers refused with 400 ``INVALID_REPLICATION_FACTOR``.
* Deletion removes the partition directories on every broker.
* A partition whose every ISR member is dead has no leader (``leader_id`` -1) and
  answers produce with ``LEADER_NOT_AVAILABLE`` until an ISR member returns.

Placement and deletion share the module's cluster (topics of their own); the tests
that stop or kill a broker start their own.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support.cluster import Cluster, Clusters, ClusterSpec, PartitionState, cluster_fixture

pytestmark = pytest.mark.integration

SPEC = ClusterSpec()

cluster = cluster_fixture(SPEC, scope="module")


def partition_dirs(cluster: Cluster, topic: str) -> dict[int, list[str]]:
    return {
        broker_id: sorted(p.name for p in broker.data_dir.glob(f"{topic}-*") if p.is_dir())
        for broker_id, broker in cluster.brokers.items()
    }


def test_leaders_and_replicas_spread_evenly_over_three_brokers(cluster: Cluster, prefix: str) -> None:
    even, odd = f"{prefix}-even", f"{prefix}-odd"
    cluster.create_topic(even, partitions=6, replication_factor=3)
    states = cluster.partitions(even)
    assert Counter(s.leader_id for s in states.values()) == {1: 2, 2: 2, 3: 2}
    assert all(s.leader_id == s.replicas[0] and s.isr == s.replicas for s in states.values())
    assert all(sorted(s.replicas) == [1, 2, 3] for s in states.values())
    assert Counter(s.replicas[1] for s in states.values()) == {1: 2, 2: 2, 3: 2}

    cluster.create_topic(odd, partitions=3, replication_factor=2, via=2)
    placed = cluster.partitions(odd, via=2)
    assert all(len(set(s.replicas)) == 2 for s in placed.values())
    together = Counter(s.leader_id for s in [*states.values(), *placed.values()])
    assert together == {1: 3, 2: 3, 3: 3}, "leaders spread across topics too"


def test_replication_factor_above_the_live_brokers_is_refused(clusters: Clusters) -> None:
    cluster = clusters.start(SPEC)
    non_controller = min(set(cluster.brokers) - {cluster.controller_id()})
    body = {"topic_name": "too-wide", "partitions_count": 1, "replication_factor": 4}
    status, error = cluster.v3("POST", "/topics", body, via=non_controller)
    assert status == 400 and error["error"] == "INVALID_REPLICATION_FACTOR", error
    assert "4" in error["message"] and "3" in error["message"]

    assert cluster.brokers[non_controller].stop() == 0
    status, error = cluster.v3("POST", "/topics", {**body, "replication_factor": 3})
    assert status == 400 and error["error"] == "INVALID_REPLICATION_FACTOR", error
    assert cluster.v3("GET", "/topics/too-wide")[0] == 404


def test_topic_deletion_removes_the_partition_directories_on_every_broker(cluster: Cluster, prefix: str) -> None:
    doomed, kept = f"{prefix}-doomed", f"{prefix}-kept"
    cluster.create_topic(doomed, partitions=3, replication_factor=3)
    cluster.create_topic(kept, partitions=1, replication_factor=3)
    for partition in range(3):
        assert cluster.produce(doomed, ["x", "y"], partition)[0] == 207
    expected = [f"{doomed}-0", f"{doomed}-1", f"{doomed}-2"]
    assert partition_dirs(cluster, doomed) == {1: expected, 2: expected, 3: expected}

    non_controller = min(set(cluster.brokers) - {cluster.controller_id()})
    status, _ = cluster.v3("DELETE", f"/topics/{doomed}", via=non_controller)
    assert status == 204
    cluster.wait_until(
        lambda: partition_dirs(cluster, doomed) == {1: [], 2: [], 3: []},
        f"{doomed}'s partition directories to go from every broker",
    )
    assert partition_dirs(cluster, kept) == {1: [f"{kept}-0"], 2: [f"{kept}-0"], 3: [f"{kept}-0"]}
    for via in cluster.brokers:
        assert cluster.v3("GET", f"/topics/{doomed}", via=via)[0] == 404


def test_partition_without_a_live_isr_member_is_leader_not_available_until_one_returns(clusters: Clusters) -> None:
    cluster = clusters.start(SPEC)
    cluster.create_topic("lonely", partitions=3, replication_factor=1)
    controller = cluster.controller_id()
    partition, state = next((p, s) for p, s in cluster.partitions("lonely").items() if s.leader_id != controller)
    replica = state.leader_id
    assert cluster.produce("lonely", ["kept"], partition, via=controller)[0] == 207
    cluster.brokers[replica].kill()

    def now(via: int = controller) -> PartitionState:
        return cluster.partitions("lonely", via=via)[partition]

    cluster.wait_until(lambda: now().leader_id == -1, f"lonely-{partition} to lose its leader")
    assert now().isr == [replica], "the last ISR member is kept"
    status, error = cluster.v3(
        "POST",
        "/topics/lonely/records",
        {"partition_id": partition, "value": {"type": "STRING", "data": "lost"}},
        via=controller,
    )
    assert status == 503 and error["error"] == "LEADER_NOT_AVAILABLE" and error["retriable"] is True, error
    status, reply = cluster.produce("lonely", ["lost"], partition, via=controller)
    assert status == 207 and [f["error"] for f in reply["failures"]] == ["LEADER_NOT_AVAILABLE"], reply

    cluster.restart(replica)
    cluster.wait_until(lambda: now().leader_id == replica, f"broker {replica} to lead lonely-{partition} again")
    assert now().leader_epoch > state.leader_epoch

    def written() -> list[object] | None:
        """A records:batch answer is 207 even when its entry failed: success means no failures."""
        status, reply = cluster.produce("lonely", ["after"], partition, via=controller)
        return reply["successes"] if status == 207 and not reply["failures"] else None

    cluster.wait_until(written, "a write to the returned leader (retriable errors retried, as a client does)")
    assert cluster.read("lonely", partition, via=controller) == ["kept", "after"]
