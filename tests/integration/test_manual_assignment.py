"""A topic created with ``replicas_assignments`` on three real brokers: placed, led and replicated as assigned.

The assignment puts partition 0 on brokers 3 and 1 (3 preferred), partition 1 on 1 and
2, partition 2 on 2 and 3: each broker leads one partition and follows another, so
every broker's HTTP answer, produce and read is checked against a placement the
controller's round robin would not have chosen. A refused assignment creates nothing
on any broker. The module shares one cluster; each test uses topics of its own.
"""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster, ClusterSpec, PartitionState, cluster_fixture

pytestmark = pytest.mark.integration

ASSIGNMENT = {"0": [3, 1], "1": [1, 2], "2": [2, 3]}

cluster = cluster_fixture(ClusterSpec(), scope="module")


def listed_by(cluster: Cluster, topic: str, via: int) -> dict[int, PartitionState]:
    """Broker ``via``'s view of ``topic``'s partitions, once it lists all of them."""

    def listed() -> dict[int, PartitionState] | None:
        states = cluster.partitions(topic, via=via)
        return states if len(states) == len(ASSIGNMENT) else None

    return cluster.wait_until(listed, f"broker {via} to list {topic}'s partitions")


def test_a_manual_assignment_places_leads_and_replicates_as_assigned(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-assigned"
    cluster.wait_until(lambda: cluster.registered_ids() == {1, 2, 3}, "every broker registered")
    status, created = cluster.v3("POST", "/topics", {"topic_name": topic, "replicas_assignments": ASSIGNMENT}, via=2)
    assert status == 201, created
    assert (created["partitions_count"], created["replication_factor"]) == (3, 2)

    expected = {int(p): replicas for p, replicas in ASSIGNMENT.items()}
    for via in (1, 2, 3):
        states = listed_by(cluster, topic, via)
        assert {p: s.replicas for p, s in states.items()} == expected
        assert {p: s.leader_id for p, s in states.items()} == {p: r[0] for p, r in expected.items()}
    for partition, replicas in expected.items():
        status, replies = cluster.v3("GET", f"/topics/{topic}/partitions/{partition}/replicas")
        assert status == 200, replies
        assert {(r["broker_id"], r["is_leader"]) for r in replies["data"]} == {
            (replicas[0], True),
            (replicas[1], False),
        }

    for partition in expected:
        status, produced = cluster.produce(topic, [f"p{partition}-a", f"p{partition}-b"], partition)
        assert status == 207, produced
        assert not produced["failures"], produced
    for partition, replicas in expected.items():
        for via in replicas:
            cluster.wait_for_values(topic, [f"p{partition}-a", f"p{partition}-b"], partition, via=via)


REFUSALS = [
    ({"0": [1, 4]}, "broker 4, which is not a registered broker"),
    ({"0": [1, 2], "1": [3]}, "partition 1 has 1 replica(s)"),
    ({"1": [1, 2]}, "partition 0 is missing"),
    ({"0": [2, 2]}, "names broker 2 more than once"),
]


def test_a_refused_assignment_is_400_naming_the_problem_and_no_broker_has_the_topic(
    cluster: Cluster, prefix: str
) -> None:
    non_controller = min(set(cluster.brokers) - {cluster.controller_id()})
    for number, (assignments, message) in enumerate(REFUSALS):
        body = {"topic_name": f"{prefix}-refused-{number}", "replicas_assignments": assignments}
        status, refused = cluster.v3("POST", "/topics", body, via=non_controller)
        assert status == 400 and refused["error"] == "INVALID_REPLICA_ASSIGNMENT", refused
        assert refused["error_code"] == 40002 and message in refused["message"], refused
    for via in cluster.brokers:
        status, listed = cluster.v3("GET", "/topics", via=via)
        assert status == 200 and not [t for t in listed["data"] if t["topic_name"].startswith(f"{prefix}-refused")], (
            listed
        )
