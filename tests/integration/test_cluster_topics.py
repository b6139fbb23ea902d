"""Topic placement, validation, deletion and leaderless partitions in a real cluster.

* Creation goes through the controller: replicas round-robin over the live brokers,
  leaders spread evenly (also across topics), a replication factor above the number
  of live brokers refused with 400 ``INVALID_REPLICATION_FACTOR``.
* Deletion removes the partition directories on every broker.
* A partition whose every ISR member is dead has no leader (``leader_id`` -1) and
  answers produce with ``LEADER_NOT_AVAILABLE`` until an ISR member returns.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.integration.cluster_harness import (
    DETECTION_MARGIN_MS,
    SESSION_TIMEOUT_MS,
    LiveCluster,
    wait_until,
)
from tests.support.brokers import http_json

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path: Path, live_cluster_factory) -> LiveCluster:
    return live_cluster_factory(f"sqlite://{(tmp_path / 'metadata.db').resolve()}")


def partition_dirs(cluster: LiveCluster, topic: str) -> dict[int, list[str]]:
    return {
        broker_id: sorted(p.name for p in broker.data_dir.glob(f"{topic}-*") if p.is_dir())
        for broker_id, broker in cluster.brokers.items()
    }


def test_leaders_and_replicas_spread_evenly_over_three_brokers(cluster: LiveCluster) -> None:
    cluster.create_topic("even", partitions=6, replication_factor=3)
    states = cluster.partitions("even")
    assert Counter(s.leader_id for s in states.values()) == {1: 2, 2: 2, 3: 2}
    assert all(s.leader_id == s.replicas[0] and s.isr == s.replicas for s in states.values())
    assert all(sorted(s.replicas) == [1, 2, 3] for s in states.values())
    assert Counter(s.replicas[1] for s in states.values()) == {1: 2, 2: 2, 3: 2}

    cluster.create_topic("odd", partitions=3, replication_factor=2, via=2)
    odd = cluster.partitions("odd", via=2)
    assert all(len(set(s.replicas)) == 2 for s in odd.values())
    together = Counter(s.leader_id for s in [*states.values(), *odd.values()])
    assert together == {1: 3, 2: 3, 3: 3}, "leaders spread across topics too"


def test_replication_factor_above_the_live_brokers_is_refused(cluster: LiveCluster) -> None:
    non_controller = min(set(cluster.brokers) - {cluster.controller_id()})
    body = {"topic_name": "too-wide", "partitions_count": 1, "replication_factor": 4}
    status, error = http_json("POST", f"{cluster.base(non_controller)}/topics", body)
    assert status == 400 and error["error"] == "INVALID_REPLICATION_FACTOR", error
    assert "4" in error["message"] and "3" in error["message"]

    assert cluster.brokers[non_controller].stop() == 0
    status, error = http_json("POST", f"{cluster.base()}/topics", {**body, "replication_factor": 3})
    assert status == 400 and error["error"] == "INVALID_REPLICATION_FACTOR", error
    assert http_json("GET", f"{cluster.base()}/topics/too-wide")[0] == 404


def test_topic_deletion_removes_the_partition_directories_on_every_broker(cluster: LiveCluster) -> None:
    cluster.create_topic("doomed", partitions=3, replication_factor=3)
    cluster.create_topic("kept", partitions=1, replication_factor=3)
    for partition in range(3):
        assert cluster.produce("doomed", partition, ["x", "y"])[0] == 207
    expected = ["doomed-0", "doomed-1", "doomed-2"]
    assert partition_dirs(cluster, "doomed") == {1: expected, 2: expected, 3: expected}

    non_controller = min(set(cluster.brokers) - {cluster.controller_id()})
    status, _ = http_json("DELETE", f"{cluster.base(non_controller)}/topics/doomed")
    assert status == 204
    wait_until(lambda: partition_dirs(cluster, "doomed") == {1: [], 2: [], 3: []}, 5, "directories to go")
    assert partition_dirs(cluster, "kept") == {1: ["kept-0"], 2: ["kept-0"], 3: ["kept-0"]}
    for via in cluster.brokers:
        assert http_json("GET", f"{cluster.base(via)}/topics/doomed")[0] == 404


def test_partition_without_a_live_isr_member_is_leader_not_available_until_one_returns(
    cluster: LiveCluster,
) -> None:
    cluster.create_topic("lonely", partitions=3, replication_factor=1)
    controller = cluster.controller_id()
    partition, state = next((p, s) for p, s in cluster.partitions("lonely").items() if s.leader_id != controller)
    replica = state.leader_id
    assert cluster.produce("lonely", partition, ["kept"], via=controller)[0] == 207
    cluster.brokers[replica].kill()

    def leaderless() -> bool:
        return cluster.partitions("lonely", via=controller)[partition].leader_id == -1

    wait_until(leaderless, (SESSION_TIMEOUT_MS + DETECTION_MARGIN_MS) / 1000, "the partition to lose its leader")
    assert cluster.partitions("lonely", via=controller)[partition].isr == [replica], "the last ISR member is kept"
    status, error = http_json(
        "POST",
        f"{cluster.base(controller)}/topics/lonely/records",
        {"partition_id": partition, "value": {"type": "STRING", "data": "lost"}},
    )
    assert status == 503 and error["error"] == "LEADER_NOT_AVAILABLE" and error["retriable"] is True, error
    status, reply = cluster.produce("lonely", partition, ["lost"], via=controller)
    assert status == 207 and [f["error"] for f in reply["failures"]] == ["LEADER_NOT_AVAILABLE"], reply

    cluster.restart(replica)
    wait_until(lambda: cluster.partitions("lonely", via=controller)[partition].leader_id == replica, 10, "its return")
    returned = cluster.partitions("lonely", via=controller)[partition]
    assert returned.leader_epoch > state.leader_epoch

    def written() -> list | None:
        """A records:batch answer is 207 even when its entry failed: success means no failures."""
        status, reply = cluster.produce("lonely", partition, ["after"], via=controller)
        return reply["successes"] if status == 207 and not reply["failures"] else None

    wait_until(written, 10, "a write to the returned leader (retriable errors retried, as a client does)")
    assert cluster.read_values("lonely", partition, via=controller) == ["kept", "after"]
