"""A topic created with ``replicas_assignments`` on three real brokers: placed, led and replicated as assigned.

The assignment puts partition 0 on brokers 3 and 1 (3 preferred), partition 1 on 1 and
2, partition 2 on 2 and 3: each broker leads one partition and follows another, so
every broker's HTTP answer, produce and read is checked against a placement the
controller's round robin would not have chosen. A refused assignment creates nothing
on any broker.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.cluster_harness import LiveCluster, session_env, wait_until
from tests.support.brokers import http_json

pytestmark = pytest.mark.integration

ASSIGNMENT = {"0": [3, 1], "1": [1, 2], "2": [2, 3]}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """One cluster for the module: each test uses topics of its own."""
    root = tmp_path_factory.mktemp("manual-assignment")
    started = LiveCluster(root / "cluster", 3, f"sqlite://{(root / 'metadata.db').resolve()}", session_env())
    try:
        yield started
    finally:
        started.shutdown()


def test_a_manual_assignment_places_leads_and_replicates_as_assigned(cluster: LiveCluster) -> None:
    wait_until(lambda: cluster.registered_ids() == {1, 2, 3}, 10, "every broker registered")
    body = {"topic_name": "assigned", "replicas_assignments": ASSIGNMENT}
    status, created = http_json("POST", f"{cluster.base(2)}/topics", body)
    assert status == 201, created
    assert (created["partitions_count"], created["replication_factor"]) == (3, 2)

    expected = {int(p): replicas for p, replicas in ASSIGNMENT.items()}
    for via in (1, 2, 3):
        states = wait_until(
            lambda v=via: (s := cluster.partitions("assigned", via=v)) and len(s) == 3 and s,
            10,
            f"broker {via} to list the partitions",
        )
        assert {p: s.replicas for p, s in states.items()} == expected
        assert {p: s.leader_id for p, s in states.items()} == {p: r[0] for p, r in expected.items()}
    for partition, replicas in expected.items():
        status, replies = http_json("GET", f"{cluster.base()}/topics/assigned/partitions/{partition}/replicas")
        assert status == 200, replies
        assert {(r["broker_id"], r["is_leader"]) for r in replies["data"]} == {
            (replicas[0], True),
            (replicas[1], False),
        }

    for partition in expected:
        status, produced = cluster.produce("assigned", partition, [f"p{partition}-a", f"p{partition}-b"])
        assert status == 207, produced
        assert not produced["failures"], produced
    for partition, replicas in expected.items():
        for via in replicas:
            cluster.wait_for_values("assigned", partition, [f"p{partition}-a", f"p{partition}-b"], via=via)


REFUSALS = [
    ({"0": [1, 4]}, "broker 4, which is not a registered broker"),
    ({"0": [1, 2], "1": [3]}, "partition 1 has 1 replica(s)"),
    ({"1": [1, 2]}, "partition 0 is missing"),
    ({"0": [2, 2]}, "names broker 2 more than once"),
]


def test_a_refused_assignment_is_400_naming_the_problem_and_no_broker_has_the_topic(cluster: LiveCluster) -> None:
    non_controller = min(set(cluster.brokers) - {cluster.controller_id()})
    for number, (assignments, message) in enumerate(REFUSALS):
        body = {"topic_name": f"refused-{number}", "replicas_assignments": assignments}
        status, refused = http_json("POST", f"{cluster.base(non_controller)}/topics", body)
        assert status == 400 and refused["error"] == "INVALID_REPLICA_ASSIGNMENT", refused
        assert refused["error_code"] == 40002 and message in refused["message"], refused
    for via in cluster.brokers:
        status, listed = http_json("GET", f"{cluster.base(via)}/topics")
        assert status == 200 and not [t for t in listed["data"] if t["topic_name"].startswith("refused")], listed
