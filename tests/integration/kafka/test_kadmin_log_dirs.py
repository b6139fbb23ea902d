"""DescribeLogDirs from kafka-python's admin client: every broker's log directory, the figures its HTTP route answers."""

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
