"""A transaction survives its coordinator's SIGKILL (its own cluster: a broker dies here).

The coordinator writes every decision to ``__transaction_state`` with acks=all before
it answers, so the new leader of the transactional id's partition loads the open
transaction, and the producer's commit, retried by librdkafka against the new
coordinator, commits exactly the records written before the kill.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from tests.integration.kafka.conftest import KAFKA_SPEC, MIN_ISR_2
from tests.integration.kafka.test_kafka_groups import call_once
from tests.integration.kafka.test_kafka_transactions import producer, read_all
from tests.support.cluster import Cluster, cluster_fixture
from tests.support.waiting import wait_until
from tests.unit.kafka.requests import request_class

pytestmark = pytest.mark.integration

kafka_cluster = cluster_fixture(
    KAFKA_SPEC.with_settings(broker_session_timeout_ms=4_000, replica_lag_time_max_ms=4_000)
)
"""A cluster of the test's own: it kills a broker, and its sessions end soon after."""


def coordinator_of(cluster: Cluster, transactional_id: str, via: int) -> int:
    find = request_class(10, 3, "FindCoordinatorRequest")(key=transactional_id, key_type=i8(1))

    def found() -> int | None:
        answer = call_once(cluster.bootstrap(via), find)
        return int(answer.node_id) if answer.error_code == ErrorCode.none else None

    return wait_until(found, f"the coordinator of {transactional_id!r}", 30)


def test_an_open_transaction_commits_through_the_new_coordinator(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-failover", partitions=2, configs=MIN_ISR_2)
    writer = producer(kafka_cluster, "txn-failover-writer")
    writer.begin_transaction()
    for i in range(6):
        writer.produce("txn-failover", f"v-{i}".encode(), partition=i % 2)
    writer.flush(30)
    coordinator = coordinator_of(kafka_cluster, "txn-failover-writer", 1)
    kafka_cluster.brokers[coordinator].kill()
    survivor = next(b for b in kafka_cluster.kafka_addresses if b != coordinator)

    def moved() -> int | None:
        now = coordinator_of(kafka_cluster, "txn-failover-writer", survivor)
        return now if now != coordinator else None

    wait_until(moved, "a new coordinator for the transactional id", 30)
    writer.commit_transaction(60)
    kafka_cluster.wait_stable("txn-failover")
    values = read_all(kafka_cluster, "txn-failover", 2, "read_committed", timeout_s=20)
    assert sorted(values) == [f"v-{i}" for i in range(6)]
    plain = Producer({"bootstrap.servers": kafka_cluster.bootstrap(survivor), "acks": "all"})
    plain.produce("txn-failover", b"after", partition=0)
    plain.flush(30)
    kafka_cluster.wait_stable("txn-failover")
    assert "after" in read_all(kafka_cluster, "txn-failover", 2, "read_committed", timeout_s=20)
