"""DeleteRecords at every door, against a real 3-broker RF 3 cluster: HTTP (any broker), the CLI, kafkajs and librdkafka.

The log start rises to the offset asked for on the leader, the answer's low watermark
says every in-sync replica followed, readers below it get ``OFFSET_OUT_OF_RANGE``, the
leader's segments wholly below it are deleted, and an offset past the high watermark
is refused with nothing changed.
"""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient

from broker.storage.checkpoint import OffsetCheckpointFile
from broker.storage.log_manager import LOG_START_OFFSET_CHECKPOINT_FILE
from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.kafkajs import run_kafkajs
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration

SMALL_SEGMENTS = {**MIN_ISR_2, "segment.bytes": 1024}


def filled(cluster: Cluster, topic: str, count: int) -> int:
    """``topic`` with ``count`` records, one batch each (so several segments); its leader."""
    cluster.create_topic(topic, configs=SMALL_SEGMENTS)
    for i in range(count):
        status, answer = cluster.produce(topic, [f"{topic}-{i}-" + "x" * 100])
        assert status == 207 and not answer["failures"], answer
    return cluster.partitions(topic)[0].leader_id


def delete(cluster: Cluster, topic: str, body: object, via: int) -> tuple[int, dict]:
    status, answer = cluster.v3("POST", f"/topics/{topic}/partitions/0/records:delete", body, via=via)
    return status, answer


def segment_bases(cluster: Cluster, broker_id: int, topic: str) -> list[int]:
    directory = cluster.brokers[broker_id].data_dir / f"{topic}-0"
    return sorted(int(path.stem) for path in directory.glob("*.log"))


def test_http_delete_records_through_any_broker(kafka_cluster: Cluster) -> None:
    topic = "dr-http"
    leader = filled(kafka_cluster, topic, 30)
    other = next(b for b in kafka_cluster.brokers if b != leader)
    assert segment_bases(kafka_cluster, leader, topic)[0] == 0 and len(segment_bases(kafka_cluster, leader, topic)) > 3

    status, answer = delete(kafka_cluster, topic, {"before_offset": 20}, via=other)
    assert (status, answer) == (200, {"topic_name": topic, "partition_id": 0, "low_watermark": 20}), "passed on"
    described = kafka_cluster.api("GET", f"/topics/{topic}/partitions/0", via=other)
    assert (described["log_start_offset"], described["low_watermark"]) == (20, 20), "the leader's, through any broker"
    assert 0 < segment_bases(kafka_cluster, leader, topic)[0] <= 20, "the segments wholly below it are gone"
    status, answer = kafka_cluster.v3("GET", f"/topics/{topic}/partitions/0/records?offset=5")
    assert (status, answer["error_code"], answer["log_start_offset"]) == (416, 41601, 20)
    assert kafka_cluster.read(topic, offset=20)[0].startswith(f"{topic}-20-")

    status, answer = delete(kafka_cluster, topic, {"before_offset": 31}, via=leader)
    assert (status, answer["error_code"]) == (416, 41601) and "high watermark 30" in answer["message"]
    for bad in ({"before_offset": -2}, {"before_offset": "20"}, {}, {"before_offset": 1, "timeout_ms": 60_001}):
        status, answer = delete(kafka_cluster, topic, bad, via=leader)
        assert status in (400, 422) and answer["error_code"] // 100 in (400, 422), (bad, answer)
    assert kafka_cluster.api("GET", f"/topics/{topic}/partitions/0")["log_start_offset"] == 20, "refused: unchanged"

    assert delete(kafka_cluster, topic, {"before_offset": 10}, via=leader)[1]["low_watermark"] == 20, "below: a no-op"
    said = kafka_cluster.cli(["partitions", "delete-records", topic, "0", "--before-offset", "-1"])
    assert "low watermark 30" in said, said
    assert kafka_cluster.read(topic, offset=30) == []


def test_kafkajs_delete_topic_records(kafka_cluster: Cluster) -> None:
    topic = "dr-kafkajs"
    filled(kafka_cluster, topic, 12)
    answer = run_kafkajs("delete_records.js", kafka_cluster.bootstrap(), topic, 0, 7)
    assert (answer["low"], answer["high"]) == ("7", "12")
    assert kafka_cluster.read(topic, offset=7)[0].startswith(f"{topic}-7-")


def test_librdkafka_delete_records(kafka_cluster: Cluster) -> None:
    topic = "dr-librdkafka"
    filled(kafka_cluster, topic, 12)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    (future,) = admin.delete_records([TopicPartition(topic, 0, 9)], request_timeout=20).values()
    assert future.result(timeout=30).low_watermark == 9
    (future,) = admin.delete_records([TopicPartition(topic, 0, 50)], request_timeout=20).values()
    with pytest.raises(Exception, match=r"OFFSET_OUT_OF_RANGE|out of range"):
        future.result(timeout=30)
    low, high = admin_watermarks(kafka_cluster, topic)
    assert (low, high) == (9, 12)


def admin_watermarks(cluster: Cluster, topic: str) -> tuple[int, int]:
    partition = cluster.api("GET", f"/topics/{topic}/partitions/0")
    return partition["log_start_offset"], partition["high_watermark"]


def test_a_delete_is_checkpointed_on_every_replica_before_the_answer(kafka_cluster: Cluster) -> None:
    """What a broker reads back at its next start: the leader wrote it before answering, each follower before
    its fetch reported it, so an answered delete cannot come back after a crash, whichever replica leads next."""
    topic = "dr-durable"
    filled(kafka_cluster, topic, 30)
    status, answer = kafka_cluster.v3("POST", f"/topics/{topic}/partitions/0/records:delete", {"before_offset": 20})
    assert (status, answer["low_watermark"]) == (200, 20)
    for broker in kafka_cluster.brokers.values():
        checkpoint = OffsetCheckpointFile(broker.data_dir / LOG_START_OFFSET_CHECKPOINT_FILE).read()
        assert checkpoint[(topic, 0)] == 20, f"broker {broker.node_id}"
