"""A Kafka consumer group survives its coordinator's SIGKILL (its own cluster: a broker dies here).

Membership is in memory, so the new coordinator (the new leader of the group's
``__consumer_offsets`` partition) does not know the member: librdkafka is answered
``NOT_COORDINATOR``/``UNKNOWN_MEMBER_ID``, finds the new coordinator and rejoins. The
commit made before the kill was written with acks=all, so it survives: the rejoined
member reads again from it (records after the commit may come twice, as Kafka's
at-least-once delivery allows), never from before it, and skips none.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException

from tests.integration.kafka.conftest import KafkaCluster
from tests.integration.kafka.test_kafka_groups import FAST_GROUP, call_once, group_url, produce
from tests.support.brokers import http_json
from tests.support.replication import wait_until
from tests.unit.kafka.requests import request_class

pytestmark = pytest.mark.integration


def consume(consumer: Consumer, count: int, timeout_s: float) -> list[tuple[int, bytes]]:
    records: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            records.append((message.offset(), message.value()))
    return records


def committed_offsets(cluster: KafkaCluster, group: str) -> list[int]:
    """The group's committed offsets over HTTP, once the new coordinator answers (it may still be loading)."""

    def answered() -> list[int] | None:
        status, body = http_json("GET", group_url(cluster, group, "/offsets"), timeout_s=10)
        return [entry["offset"] for entry in body["data"]] if status == 200 else None

    return wait_until(answered, 30, "the group's offsets from its coordinator")


def test_a_member_rejoins_the_new_coordinator_and_resumes_after_its_commit(kafka_cluster: KafkaCluster) -> None:
    topic, group = "groups-failover", "failover-group"
    kafka_cluster.create_topic(topic)
    produce(kafka_cluster, topic, 10, 1)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap(),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **FAST_GROUP,
        }
    )
    try:
        consumer.subscribe([topic])
        before = consume(consumer, 5, 30)
        assert [offset for offset, _ in before] == list(range(5))
        consumer.commit(offsets=None, asynchronous=False)
        find = request_class(10, 0, "FindCoordinatorRequest")(key=group)
        coordinator = call_once(kafka_cluster.bootstrap(1), find).node_id
        kafka_cluster.cluster.brokers[coordinator].kill()

        assert committed_offsets(kafka_cluster, group) == [5]
        after: list[int] = []

        def read_to_the_end_and_commit() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                after.append(message.offset())
            if not after or after[-1] != 9:
                return False
            try:
                consumer.commit(offsets=None, asynchronous=False)
            except KafkaException:  # the assignment was lost to the rejoin: read again from the commit
                return False
            return True

        wait_until(read_to_the_end_and_commit, 60, "every record, then a commit through the new coordinator")
        assert after[0] == 5 and min(after) == 5, after
        assert set(after) == set(range(5, 10))
        assert committed_offsets(kafka_cluster, group) == [10]
        survivor = next(b for b in kafka_cluster.kafka_addresses if b != coordinator)
        new_coordinator = call_once(kafka_cluster.bootstrap(survivor), find)
        assert new_coordinator.node_id != coordinator
    finally:
        consumer.close()
