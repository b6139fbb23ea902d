"""Moving partitions between real brokers: onto a broker added to the running cluster, under acks=all load.

A move keeps the original replicas until the new one is in sync (the controller's
``broker.cluster.reassignment``), so no acknowledged record is lost, none is written
twice, a reader never goes back nor sees anything at or above the HW while the
leader moves, and neither does the "latest" offset any broker answers (KIP-207); the replica that leaves deletes its log; a bad request moves nothing.
A move may change a partition's replication factor; the topic's follows once every partition agrees.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.storage.log_manager import partition_directory_name
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture
from tests.support.replication import read_all
from tests.support.replication_load import BackgroundConsumer, BackgroundProducer, LatestOffsetWatcher

pytestmark = pytest.mark.integration

ALTER = "/topics/-/partitions/-/reassignment:alter"
cluster = cluster_fixture(ClusterSpec(store="etcd"), scope="module")
"""On etcd: a test stops a broker (SIGSTOP), which on the sqlite store could hold the store's write
lock (a keep-alive's transaction) and so every other broker's writes, the move's among them."""


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
    producer = BackgroundProducer(cluster, topic).start()
    consumer = BackgroundConsumer(cluster, topic).start()
    watcher = LatestOffsetWatcher(cluster, topic, (0, 1)).start()
    cluster.wait_until(lambda: len(producer.acknowledged) >= 50, "records before the move")

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
    cluster.wait_until(lambda: len(producer.acknowledged) >= 150, "records after the move")
    producer.stop()
    acknowledged = [ack.value for ack in producer.acknowledged]
    cluster.wait_until(lambda: consumer.position >= producer.acknowledged[-1].offset + 1, "the reader to catch up")
    consumer.stop()
    watcher.stop()
    assert consumer.violations == [], consumer.violations[:5]
    assert watcher.violations == [], watcher.violations[:5]
    assert watcher.answers > 0 and watcher.highest[0] > 0, (watcher.answers, watcher.errors[:5])
    read = [value for _, value in read_all(cluster, topic, 0, via=2)]
    assert len(read) == len(set(read)), f"{topic}-0 holds a record twice"
    missing = [value for value in acknowledged if value not in set(read)]
    assert not missing, f"{len(missing)} acknowledged records lost, first {missing[:3]}"

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
    cluster.wait_until(
        lambda: sorted(cluster.partitions(topic, via=controller)[0].replicas) == [leaving, staying],
        "the leader, whose description is shown, to hold the cancelled record too",
    )
    assert sorted(cluster.partitions(topic, via=controller)[0].isr) == [leaving, staying]
    status, after = cluster.v3("GET", f"/topics/{topic}/partitions/0/reassignment", via=controller)
    assert (status, after["error_code"]) == (404, 40400), after
    copy = Path(target.data_dir) / partition_directory_name(topic, 0)
    cluster.wait_until(lambda: not copy.exists(), f"broker {target_id} to drop the cancelled copy")
    assert cluster.read(topic, 0, via=target_id) == ["kept"]


@pytest.mark.parametrize(
    ("replicas", "status", "named"),
    [
        ([2, 9], 400, "broker 9 is not a live broker"),
        ([2, 2], 400, "broker 2 more than once"),
        ([2], 400, "the target names 1 broker(s) but topic"),
        ("partition 7", 404, "no partition 7"),
    ],
)
def test_a_request_with_a_bad_move_answers_what_is_wrong_and_moves_nothing(
    cluster: Cluster, prefix: str, replicas: object, status: int, named: str
) -> None:
    topic = f"{prefix}-kept"
    body = {
        "topic_name": topic,
        "replicas_assignments": {"0": [1, 2]},
        "configs": [{"name": "min.insync.replicas", "value": "2"}],
    }
    cluster.v3("POST", "/topics", body, via=1)
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


def _replication_factor(cluster: Cluster, topic: str, via: int) -> int:
    return int(cluster.api("GET", f"/topics/{topic}", via=via)["replication_factor"])


def _settled(cluster: Cluster, topic: str, expected: dict[int, list[int]]) -> bool:
    """Every partition on exactly ``expected`` (in order), every replica in sync, led by one of them, none moving."""
    states = cluster.partitions(topic, via=3)
    return {p: s.replicas for p, s in states.items()} == expected and all(
        sorted(s.isr) == sorted(s.replicas) and s.leader_id in s.replicas for s in states.values()
    )


def test_a_topic_grows_from_two_replicas_to_three_and_back_keeping_every_record(cluster: Cluster, prefix: str) -> None:
    """Each partition grows (an added replica copies the log), then shrinks off broker 1, which led
    partition 0, so its leadership moves; the topic's replication factor changes once both partitions agree."""
    topic = f"{prefix}-resized"
    assignment = {"0": [1, 2], "1": [2, 3]}
    configs = [{"name": "min.insync.replicas", "value": "2"}]
    status, created = cluster.v3(
        "POST", "/topics", {"topic_name": topic, "replicas_assignments": assignment, "configs": configs}, via=1
    )
    assert status == 201, created
    cluster.wait_for_topic(topic, 2)
    written: dict[int, list[str]] = {0: [], 1: []}

    def produce(label: str) -> None:
        for partition in (0, 1):
            values = [f"{label}-{partition}-{i}" for i in range(20)]
            status, answer = cluster.produce(topic, values, partition, via=2)
            assert status == 207 and not answer["failures"], answer
            written[partition] += values

    produce("rf2")
    status, answer = _moves(cluster, [{"topic_name": topic, "partition_id": 0, "replicas": [1, 2, 3]}])
    assert status == 202, answer
    assert [(row["adding_replicas"], row["removing_replicas"]) for row in answer["data"]] == [([3], [])]
    cluster.wait_until(lambda: _settled(cluster, topic, {0: [1, 2, 3], 1: [2, 3]}), "partition 0 on three replicas")
    assert _replication_factor(cluster, topic, via=3) == 2, "partition 1 still has two replicas"

    assert _moves(cluster, [{"topic_name": topic, "partition_id": 1, "replicas": [2, 3, 1]}])[0] == 202
    cluster.wait_until(lambda: _settled(cluster, topic, {0: [1, 2, 3], 1: [2, 3, 1]}), "partition 1 on three too")
    cluster.wait_until(lambda: _replication_factor(cluster, topic, via=3) == 3, "the topic's replication factor 3")
    produce("rf3")

    status, refused = _moves(cluster, [{"topic_name": topic, "partition_id": 0, "replicas": [3]}])
    assert (status, refused["error_code"]) == (400, 40002), refused
    assert f"{topic}-0: the target names 1 broker(s)" in refused["message"], refused
    assert "needs 2 in sync" in refused["message"], refused

    status, answer = _moves(
        cluster,
        [
            {"topic_name": topic, "partition_id": 0, "replicas": [2, 3]},
            {"topic_name": topic, "partition_id": 1, "replicas": [2, 3]},
        ],
    )
    assert status == 202, answer
    cluster.wait_until(lambda: _settled(cluster, topic, {0: [2, 3], 1: [2, 3]}), "both partitions back on two")
    assert cluster.partitions(topic, via=3)[0].leader_id in (2, 3), "broker 1 left: it cannot lead partition 0"
    cluster.wait_until(lambda: _replication_factor(cluster, topic, via=1) == 2, "the topic's replication factor 2")
    produce("rf2-again")

    for partition in (0, 1):
        for via in (2, 3):
            read = [value for _, value in read_all(cluster, topic, partition, via=via)]
            assert read == written[partition], (
                f"{topic}-{partition} via {via}: {len(read)} of {len(written[partition])}"
            )
    left = [Path(cluster.brokers[1].data_dir) / partition_directory_name(topic, p) for p in (0, 1)]
    cluster.wait_until(lambda: not any(path.exists() for path in left), "broker 1 to delete the logs it left")
