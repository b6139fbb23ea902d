"""DescribeLogDirs and DescribeTopicPartitions from kafka-python's admin client, the figures the HTTP routes answer; topic ids."""

from __future__ import annotations

import uuid
from contextlib import closing

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient  # type: ignore[import-untyped]

from broker.cluster.records import kafka_uuid_text
from tests.integration.kafka.conftest import MIN_ISR_2
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration


def test_describe_log_dirs_answers_each_brokers_replica_bytes(kafka_cluster: Cluster) -> None:
    topic = "adm-log-dirs"
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
    kafka_cluster.produce(topic, ["x" * 500] * 10)
    kafka_cluster.wait_until(
        lambda: len(set(kafka_cluster.partitions(topic)[0].replica_log_end_offsets.values())) == 1,
        "every replica holds all",
    )
    with closing(KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())) as admin:
        answers = admin.describe_log_dirs({topic: [0]})
    assert sorted(answer["broker"] for answer in answers) == sorted(kafka_cluster.brokers)
    for answer in answers:
        (log_dir,) = answer["log_dirs"]
        (over_http,) = kafka_cluster.api("GET", f"/brokers/{answer['broker']}/log-dirs")["data"]
        (held,) = [r for r in over_http["replicas"] if r["topic_name"] == topic]
        assert log_dir["error_code"] == 0 and log_dir["log_dir"] == over_http["log_dir"]
        assert log_dir["topics"] == [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "partition_size": held["size_bytes"],
                        "offset_lag": 0,
                        "is_future_key": False,
                    }
                ],
            }
        ]
        assert held["size_bytes"] > 5000 and 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]


def test_describe_topic_partitions_pages_through_the_partitions(kafka_cluster: Cluster) -> None:
    first, second = "adm-pages-a", "adm-pages-b"
    kafka_cluster.create_topic(first, partitions=3, configs=MIN_ISR_2)
    kafka_cluster.create_topic(second, partitions=2, configs=MIN_ISR_2)
    states = {topic: kafka_cluster.partitions(topic) for topic in (first, second)}
    pages, cursor = [], None
    with closing(KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())) as admin:
        while True:
            answer = admin.describe_topic_partitions([second, first], response_partition_limit=2, cursor=cursor)
            pages.append([(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in answer["topics"]])
            for topic in answer["topics"]:
                for partition in topic["partitions"]:
                    state = states[topic["name"]][partition["partition_index"]]
                    assert (partition["leader_id"], partition["replica_nodes"]) == (state.leader_id, state.replicas)
                    assert sorted(partition["isr_nodes"]) == sorted(state.isr)
            cursor = answer["next_cursor"]
            if cursor is None:
                break
        missing = admin.describe_topic_partitions(["adm-pages-missing"])["topics"]
    assert pages == [[(first, [0, 1])], [(first, [2]), (second, [0])], [(second, [1])]], "name order, 2 a page"
    assert [(t["name"], t["error_code"], t["partitions"]) for t in missing] == [("adm-pages-missing", 3, [])]


def test_a_topic_has_one_id_on_every_broker_and_a_new_one_when_created_again(kafka_cluster: Cluster) -> None:
    """KIP-516: librdkafka's describe_topics (Metadata v12) from each broker and kafka-python's
    DescribeTopicPartitions show one id; deleted and created again, the topic has another."""
    topic = "adm-topic-id"
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
    seen = {_described_id(kafka_cluster.bootstrap(broker_id), topic) for broker_id in kafka_cluster.brokers}
    with closing(KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())) as admin:
        (described,) = admin.describe_topic_partitions([topic])["topics"]
    assert seen == {uuid.UUID(str(described["topic_id"]))}
    (topic_id,) = seen
    assert topic_id.int != 0
    assert kafka_cluster.api("GET", f"/topics/{topic}")["topic_id"] == kafka_uuid_text(topic_id)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    admin.delete_topics([topic])[topic].result(timeout=20)
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
    assert _described_id(kafka_cluster.bootstrap(), topic) not in (topic_id, uuid.UUID(int=0))


def _described_id(bootstrap: str, topic: str) -> uuid.UUID:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_topics(TopicCollection([topic])).values()
    kafka_id = future.result(timeout=20).topic_id
    high, low = kafka_id.get_most_significant_bits(), kafka_id.get_least_significant_bits()
    return uuid.UUID(int=((high % 2**64) << 64) | (low % 2**64))
