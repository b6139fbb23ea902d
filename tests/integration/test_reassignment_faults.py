"""A move survives its faults on real brokers, under acks=all load: the new replica SIGKILLed while it
copies resumes copying once restarted, and a controller SIGKILLed mid-move is succeeded by one that
completes the move (the move lives in the partition record, not in the controller's memory).

Each test runs a cluster of its own: it kills a broker. The new replica is held back (SIGSTOP) while
the move starts, so the fault lands while it is still moving, whatever the machine's speed. The
clusters keep their metadata in etcd: a broker stopped while it holds the sqlite store's write lock
(a keep-alive's transaction) would hold up every other broker's writes, the move's among them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.storage.log_manager import partition_directory_name
from tests.support.cluster import Cluster, Clusters, ClusterSpec
from tests.support.replication import read_all
from tests.support.replication_load import BackgroundConsumer, BackgroundProducer

pytestmark = pytest.mark.integration

ALTER = "/topics/-/partitions/-/reassignment:alter"


def _move(cluster: Cluster, topic: str, replicas: list[int], via: int) -> None:
    status, answer = cluster.v3(
        "POST", ALTER, {"data": [{"topic_name": topic, "partition_id": 0, "replicas": replicas}]}, via=via
    )
    assert status == 202, answer
    [row] = answer["data"]
    assert row["adding_replicas"], f"the move completed at once: {row}"


def _under_load(cluster: Cluster, topic: str, replicas: list[int]) -> tuple[BackgroundProducer, BackgroundConsumer]:
    """``topic`` on ``replicas``, with acks=all writes and a reader running, 100 records in."""
    cluster.v3("POST", "/topics", {"topic_name": topic, "replicas_assignments": {"0": replicas}})
    cluster.wait_for_topic(topic, 1)
    producer = BackgroundProducer(cluster, topic).start()
    consumer = BackgroundConsumer(cluster, topic).start()
    cluster.wait_until(lambda: len(producer.acknowledged) >= 100, "records before the move")
    return producer, consumer


def _moved(cluster: Cluster, topic: str, replicas: list[int], via: int) -> bool:
    state = cluster.partitions(topic, via=via)[0]
    return state.replicas == replicas and sorted(state.isr) == sorted(replicas)


def _nothing_lost(cluster: Cluster, topic: str, producer: BackgroundProducer, consumer: BackgroundConsumer, via: int):
    producer.stop()
    cluster.wait_until(lambda: consumer.position > producer.acknowledged[-1].offset, "the reader to catch up")
    consumer.stop()
    assert consumer.violations == [], consumer.violations[:5]
    read = [value for _, value in read_all(cluster, topic, 0, via=via)]
    assert len(read) == len(set(read)), f"{topic}-0 holds a record twice"
    missing = [ack.value for ack in producer.acknowledged if ack.value not in set(read)]
    assert not missing, f"{len(missing)} acknowledged records lost, first {missing[:3]}"


def test_a_new_replica_killed_while_it_copies_resumes_once_restarted(clusters: Clusters) -> None:
    cluster = clusters.start(ClusterSpec(store="etcd"))
    controller = cluster.controller_id()
    target_id = max({1, 2, 3} - {controller})
    leaving, staying = sorted({1, 2, 3} - {target_id})
    topic = "moved-through-a-crash"
    producer, consumer = _under_load(cluster, topic, [leaving, staying])

    target = cluster.brokers[target_id]
    target.pause()
    _move(cluster, topic, [target_id, staying], via=controller)
    target.kill()
    cluster.wait_until(lambda: len(producer.acknowledged) >= 200, "records while the new replica is down")
    assert not _moved(cluster, topic, [target_id, staying], via=controller)
    cluster.restart(target_id)
    cluster.wait_until(
        lambda: _moved(cluster, topic, [target_id, staying], via=controller), "the restarted copy to finish the move"
    )
    _nothing_lost(cluster, topic, producer, consumer, via=controller)
    assert [v for _, v in read_all(cluster, topic, 0, via=target_id)] == [
        v for _, v in read_all(cluster, topic, 0, via=staying)
    ]
    leaving_log = Path(cluster.brokers[leaving].data_dir) / partition_directory_name(topic, 0)
    cluster.wait_until(lambda: not leaving_log.exists(), f"broker {leaving} to delete the log it left")


def test_a_controller_killed_mid_move_is_succeeded_by_one_that_completes_it(clusters: Clusters) -> None:
    cluster = clusters.start(ClusterSpec(store="etcd"))
    controller = cluster.controller_id()
    target_id, staying = sorted({1, 2, 3} - {controller})
    topic = "moved-through-a-failover"
    producer, consumer = _under_load(cluster, topic, [controller, staying])

    target = cluster.brokers[target_id]
    target.pause()
    try:
        _move(cluster, topic, [target_id, staying], via=staying)
        cluster.brokers[controller].kill()
    finally:
        target.resume()
    cluster.wait_until(
        lambda: cluster.controller_id(via=staying) not in (-1, controller), "a new controller", timeout_s=30
    )
    cluster.wait_until(
        lambda: _moved(cluster, topic, [target_id, staying], via=staying),
        "the new controller to complete the move",
        timeout_s=60,
    )
    _nothing_lost(cluster, topic, producer, consumer, via=staying)
