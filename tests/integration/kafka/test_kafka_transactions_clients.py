"""Transactional producers of the other Kafka clients: kafkajs, aiokafka and kafka-python.

Each commits one transaction and aborts another over two partitions of a real 3-broker
cluster; a ``read_committed`` reader (librdkafka) sees exactly the committed records.
kafkajs runs on Node (``make kafkajs`` installs it under ``.venv``).
"""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]
from kafka import KafkaProducer  # type: ignore[import-untyped]

from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.kafkajs import run_kafkajs
from tests.integration.kafka.test_kafka_transactions import read_all
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration

COMMITTED = ["committed-0", "committed-1"]
ABORTED = ["aborted-0", "aborted-1"]


def assert_only_committed(cluster: Cluster, topic: str, prefix: str) -> None:
    cluster.wait_stable(topic)
    assert sorted(read_all(cluster, topic, 2, "read_committed")) == [f"{prefix}-{v}" for v in COMMITTED]
    everything = sorted(read_all(cluster, topic, 2, "read_uncommitted"))
    assert everything == sorted(f"{prefix}-{v}" for v in COMMITTED + ABORTED)


def test_kafkajs_commits_and_aborts(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-kafkajs", partitions=2, configs=MIN_ISR_2)
    assert run_kafkajs("transactions.js", kafka_cluster.bootstrap(), "txn-kafkajs", "kafkajs-writer") == {"ok": True}
    assert_only_committed(kafka_cluster, "txn-kafkajs", "kjs")


async def test_aiokafka_commits_and_aborts(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-aiokafka", partitions=2, configs=MIN_ISR_2)
    producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), transactional_id="aiokafka-writer")
    await producer.start()
    try:
        for values, commit in ((COMMITTED, True), (ABORTED, False)):
            await producer.begin_transaction()
            for i, value in enumerate(values):
                await producer.send_and_wait("txn-aiokafka", f"aio-{value}".encode(), partition=i % 2)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()
    assert_only_committed(kafka_cluster, "txn-aiokafka", "aio")


def test_kafka_python_commits_and_aborts(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-kafka-python", partitions=2, configs=MIN_ISR_2)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), transactional_id="kafka-python-writer")
    try:
        producer.init_transactions()
        for values, commit in ((COMMITTED, True), (ABORTED, False)):
            producer.begin_transaction()
            for i, value in enumerate(values):
                producer.send("txn-kafka-python", f"kp-{value}".encode(), partition=i % 2)
            producer.flush()
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close()
    assert_only_committed(kafka_cluster, "txn-kafka-python", "kp")
