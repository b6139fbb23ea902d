"""DescribeLogDirs and DescribeTopicPartitions from kafka-python's admin client, the figures the HTTP routes answer."""

from __future__ import annotations

from contextlib import closing

import pytest
from kafka.admin import KafkaAdminClient  # type: ignore[import-untyped]

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
