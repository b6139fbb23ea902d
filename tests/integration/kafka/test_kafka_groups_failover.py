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

from tests.integration.kafka.conftest import KAFKA_SPEC, MIN_ISR_2
from tests.integration.kafka.test_kafka_groups import FAST_GROUP, call_once, group_path, produce
from tests.support.cluster import Cluster, cluster_fixture
from tests.support.waiting import wait_until
from tests.unit.kafka.requests import request_class

pytestmark = pytest.mark.integration

kafka_cluster = cluster_fixture(KAFKA_SPEC)
"""A cluster of the test's own: it kills a broker."""


def consume(consumer: Consumer, count: int, timeout_s: float) -> list[tuple[int, bytes]]:
    records: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout_s
    while len(records) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            offset, value = message.offset(), message.value()
            assert offset is not None and value is not None
            records.append((offset, value))
    return records


def committed_offsets(cluster: Cluster, group: str) -> list[int]:
    """The group's committed offsets over HTTP, once the new coordinator answers (it may still be loading)."""

    def answered() -> list[int] | None:
        status, body = cluster.v3("GET", group_path(group, "/offsets"), timeout_s=10)
        return [entry["offset"] for entry in body["data"]] if status == 200 else None

    return wait_until(answered, "the group's offsets from its coordinator", 30)


def test_a_member_rejoins_the_new_coordinator_and_resumes_after_its_commit(kafka_cluster: Cluster) -> None:
    topic, group = "groups-failover", "failover-group"
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
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
        consumer.commit(asynchronous=False)
        find = request_class(10, 0, "FindCoordinatorRequest")(key=group)
        coordinator = call_once(kafka_cluster.bootstrap(1), find).node_id
        kafka_cluster.brokers[coordinator].kill()

        assert committed_offsets(kafka_cluster, group) == [5]
        after: list[int] = []

        def read_to_the_end_and_commit() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                offset = message.offset()
                assert offset is not None
                after.append(offset)
            if not after or after[-1] != 9:
                return False
            try:
                consumer.commit(asynchronous=False)
            except KafkaException:  # the assignment was lost to the rejoin: read again from the commit
                return False
            return True

        wait_until(read_to_the_end_and_commit, "every record, then a commit through the new coordinator", 60)
        assert after[0] == 5 and min(after) == 5, after
        assert set(after) == set(range(5, 10))
        assert committed_offsets(kafka_cluster, group) == [10]
        survivor = next(b for b in kafka_cluster.kafka_addresses if b != coordinator)
        new_coordinator = call_once(kafka_cluster.bootstrap(survivor), find)
        assert new_coordinator.node_id != coordinator
    finally:
        consumer.close()
