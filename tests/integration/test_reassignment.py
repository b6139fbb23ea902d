"""Moving partitions between real brokers: onto a broker added to the running cluster, under acks=all load.

A move keeps the original replicas until the new one is in sync (the controller's
``broker.cluster.reassignment``), so no acknowledged record is lost and none is read
twice; the replica that leaves deletes its log; a bad request moves nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from broker.storage.log_manager import partition_directory_name
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

ALTER = "/topics/-/partitions/-/reassignment:alter"
cluster = cluster_fixture(ClusterSpec(), scope="module")


class AckedProducer(threading.Thread):
    """Produces acks=all batches to one partition until stopped; keeps the values acknowledged (the batch
    route answers 207 with each record's success or failure)."""

    def __init__(self, cluster: Cluster, topic: str, partition: int) -> None:
        super().__init__(daemon=True)
        self.cluster, self.topic, self.partition = cluster, topic, partition
        self.acknowledged: list[str] = []
        self.refused: list[object] = []
        """Why records were not acknowledged (a leader moving: retriable, and never retried here)."""
        self.stopping = threading.Event()

    def run(self) -> None:
        batch = 0
        while not self.stopping.is_set():
            values = [f"p{self.partition}-b{batch}-{i}" for i in range(5)]
            try:
                status, answer = self.cluster.produce(self.topic, values, self.partition, via=3)
            except OSError as error:
                status, answer = None, error
            if status == 207:
                self.acknowledged.extend(values[int(success["id"])] for success in answer["successes"])
                self.refused.extend(failure["error_code"] for failure in answer["failures"])
            else:
                self.refused.append(status)
            batch += 1

    def stop(self) -> list[str]:
        self.stopping.set()
        self.join(timeout=30)
        return self.acknowledged


def _moves(cluster: Cluster, data: list[dict]) -> tuple[int, dict]:
    return cluster.v3("POST", ALTER, {"data": data}, via=2)


def test_partitions_move_onto_an_added_broker_under_load_losing_nothing(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-moved"
    status, created = cluster.v3(
        "POST", "/topics", {"topic_name": topic, "replicas_assignments": {"0": [1, 2], "1": [1, 3]}}, via=1
    )
    assert status == 201, created
    cluster.wait_for_topic(topic, 2)
    added = cluster.extra_broker(4, "added").start()
    cluster.wait_until(lambda: cluster.registered_ids() == {1, 2, 3, 4}, "broker 4 registered")
    producers = [AckedProducer(cluster, topic, partition) for partition in (0, 1)]
    for producer in producers:
        producer.start()
    cluster.wait_until(lambda: all(len(p.acknowledged) >= 50 for p in producers), "records before the move")

    status, answer = _moves(
        cluster,
        [
            {"topic_name": topic, "partition_id": 0, "replicas": [4, 2]},
            {"topic_name": topic, "partition_id": 1, "replicas": [3, 4]},
        ],
    )
    assert status == 202, answer
    rows = {row["partition_id"]: (row["adding_replicas"], row["removing_replicas"]) for row in answer["data"]}
    assert rows == {0: ([4], [1]), 1: ([4], [1])}

    def moved() -> bool:
        states = cluster.partitions(topic, via=2)
        return (states[0].replicas, states[1].replicas) == ([4, 2], [3, 4]) and all(
            sorted(s.isr) == sorted(s.replicas) and s.leader_id in s.replicas for s in states.values()
        )

    cluster.wait_until(moved, "both partitions on their target replicas, all in sync", timeout_s=60)
    status, listing = cluster.v3("GET", "/topics/-/partitions/-/reassignment", via=2)
    assert (status, listing["data"]) == (200, [])
    cluster.wait_until(lambda: all(len(p.acknowledged) >= 150 for p in producers), "records after the move")
    acknowledged = [producer.stop() for producer in producers]

    for partition, values in enumerate(acknowledged):
        read = _read_all(cluster, topic, partition)
        assert len(read) == len(set(read)), f"{topic}-{partition} holds a record twice"
        missing = [value for value in values if value not in set(read)]
        assert not missing, f"{len(missing)} acknowledged records of {topic}-{partition} lost, first {missing[:3]}"

    leaving = Path(cluster.brokers[1].data_dir)
    gone = [leaving / partition_directory_name(topic, p) for p in (0, 1)]
    cluster.wait_until(lambda: not any(path.exists() for path in gone), "broker 1 to delete the logs it left")
    assert (Path(added.data_dir) / partition_directory_name(topic, 0)).is_dir()
    added.stop()


def test_a_move_in_progress_is_listed_and_a_cancel_returns_to_the_original_replicas(
    cluster: Cluster, prefix: str
) -> None:
    """The move's new replica is stopped (SIGSTOP) for its first moments, so it cannot catch up: the move is
    seen in progress and cancelled; once it runs again it drops the copy. It is never the controller,
    whose pause would hold up the requests themselves."""
    topic = f"{prefix}-cancelled"
    controller = cluster.controller_id()
    target_id = max({1, 2, 3} - {controller})
    leaving, staying = sorted({1, 2, 3} - {target_id})
    assignment = {"0": [leaving, staying]}
    cluster.v3("POST", "/topics", {"topic_name": topic, "replicas_assignments": assignment}, via=controller)
    cluster.wait_for_topic(topic, 1)
    assert cluster.produce(topic, ["kept"], 0, via=controller)[0] == 207
    target = cluster.brokers[target_id]
    target.pause()
    try:
        status, answer = cluster.v3(
            "POST",
            ALTER,
            {"data": [{"topic_name": topic, "partition_id": 0, "replicas": [target_id, staying]}]},
            via=controller,
        )
        assert status == 202, answer
        moving = cluster.api("GET", f"/topics/{topic}/partitions/0/reassignment", via=controller)
        listed = cluster.api("GET", "/topics/-/partitions/-/reassignment", via=controller)["data"]
        by_topic = cluster.api("GET", f"/topics/{topic}/partitions/-/reassignment", via=controller)["data"]
        cancel = {"data": [{"topic_name": topic, "partition_id": 0, "replicas": None}]}
        status, cancelled = cluster.v3("POST", ALTER, cancel, via=controller)
    finally:
        target.resume()
    assert (moving["adding_replicas"], moving["removing_replicas"]) == ([target_id], [leaving])
    assert [row["partition_id"] for row in listed if row["topic_name"] == topic] == [0]
    assert [(row["adding_replicas"], row["removing_replicas"]) for row in by_topic] == [([target_id], [leaving])]
    assert status == 202, cancelled
    assert [(row["adding_replicas"], row["removing_replicas"]) for row in cancelled["data"]] == [([], [])]
    state = cluster.partitions(topic, via=controller)[0]
    assert (sorted(state.replicas), sorted(state.isr)) == ([leaving, staying], [leaving, staying])
    status, after = cluster.v3("GET", f"/topics/{topic}/partitions/0/reassignment", via=controller)
    assert (status, after["error_code"]) == (404, 40400), after
    copy = Path(target.data_dir) / partition_directory_name(topic, 0)
    cluster.wait_until(lambda: not copy.exists(), f"broker {target_id} to drop the cancelled copy")
    assert cluster.read(topic, 0, via=target_id) == ["kept"]


def _read_all(cluster: Cluster, topic: str, partition: int) -> list[str]:
    values: list[str] = []
    while True:
        chunk = cluster.read(topic, partition, offset=len(values), via=2)
        if not chunk:
            return values
        values.extend(chunk)


@pytest.mark.parametrize(
    ("replicas", "status", "named"),
    [
        ([2, 9], 400, "broker 9 is not a live broker"),
        ([2, 2], 400, "broker 2 more than once"),
        ([2], 400, "replication factor 2"),
        ("partition 7", 404, "no partition 7"),
    ],
)
def test_a_request_with_a_bad_move_answers_what_is_wrong_and_moves_nothing(
    cluster: Cluster, prefix: str, replicas: object, status: int, named: str
) -> None:
    topic = f"{prefix}-kept"
    cluster.v3("POST", "/topics", {"topic_name": topic, "replicas_assignments": {"0": [1, 2]}}, via=1)
    cluster.wait_for_topic(topic, 1)
    good = {"topic_name": topic, "partition_id": 0, "replicas": [2, 3]}
    bad = (
        {"topic_name": topic, "partition_id": 7, "replicas": [2, 3]}
        if replicas == "partition 7"
        else {"topic_name": topic, "partition_id": 0, "replicas": replicas}
    )
    answer_status, answer = _moves(cluster, [good, bad] if replicas == "partition 7" else [bad])
    assert answer_status == status, answer
    assert named in answer["message"], answer
    assert cluster.partitions(topic, via=2)[0].replicas == [1, 2]
    status_twice, twice = _moves(cluster, [good, good])
    assert (status_twice, twice["error_code"]) == (400, 40001), twice
