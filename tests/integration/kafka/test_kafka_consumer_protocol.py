"""librdkafka consumers on KIP-848's consumer protocol (``group.protocol=consumer``) against a real 3-broker RF 3 cluster.

They join, split partitions, commit and leave through ConsumerGroupHeartbeat answered by the
coordinator that serves the HTTP groups, so an HTTP member shares a group with them, and the
admin client describes the group through ConsumerGroupDescribe with its type.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.group_members import Member
from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.test_kafka_groups import PollingConsumer, group_path, polled, produce
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


class ConsumerProtocolMember:
    """A ``group.protocol=consumer`` librdkafka consumer polled by its own thread, which also makes the
    commits asked of it: a synchronous commit from another thread waited behind the polling for ever."""

    def __init__(self, cluster: Cluster, group: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap(),
                "group.id": group,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.subscribe([topic])
        self._commits: queue.Queue[tuple[list[TopicPartition], queue.Queue[Any]]] = queue.Queue()
        self.polling = PollingConsumer(
            self._poll, lambda: {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        )

    def _poll(self) -> list[tuple[str, int, int, bytes]]:
        while not self._commits.empty():
            offsets, done = self._commits.get()
            done.put(self.consumer.commit(offsets=offsets, asynchronous=False))
        message = self.consumer.poll(0.1)
        if message is None or message.error() is not None:
            return []
        topic, partition, offset, value = message.topic(), message.partition(), message.offset(), message.value()
        assert topic is not None and partition is not None and offset is not None and value is not None
        return [(topic, partition, offset, value)]

    def commit(self, topic: str, offsets: dict[int, int]) -> None:
        done: queue.Queue[Any] = queue.Queue()
        self._commits.put(([TopicPartition(topic, p, o) for p, o in offsets.items()], done))
        committed = done.get(timeout=30)
        assert all(tp.error is None for tp in committed), committed


@contextmanager
def member(cluster: Cluster, group: str, topic: str) -> Iterator[ConsumerProtocolMember]:
    joined = ConsumerProtocolMember(cluster, group, topic)
    with polled((joined.consumer, joined.polling)):
        yield joined


def test_two_consumer_protocol_members_split_the_partitions_read_everything_once_and_commit(
    kafka_cluster: Cluster,
) -> None:
    topic, group = "kip848-split", "kip848-split-group"
    kafka_cluster.create_topic(topic, partitions=4, configs=MIN_ISR_2)
    produce(kafka_cluster, topic, 40, 4)
    everything = frozenset((topic, p) for p in range(4))
    with member(kafka_cluster, group, topic) as first_member:
        first = first_member.polling
        wait_until(lambda: first.assignment == everything, "the only member owns every partition", 30)
        wait_until(lambda: len(first.records) == 40, "the first member read all 40 records", 30)
        first_member.commit(topic, dict.fromkeys(range(4), 10))
        with member(kafka_cluster, group, topic) as second_member:
            second = second_member.polling

            def split() -> bool:
                both = (first.assignment, second.assignment)
                return all(len(a) == 2 for a in both) and first.assignment | second.assignment == everything

            wait_until(split, "two members with two partitions each", 30)
            produce(kafka_cluster, topic, 40, 4)

            def second_round() -> list[tuple[int, int]]:
                return [(p, o) for _, p, o, _ in first.records + second.records if o >= 10]

            wait_until(lambda: len(second_round()) >= 40, "the next 40 records read", 30)
            assert sorted(second_round()) == sorted((p, o) for p in range(4) for o in range(10, 20)), "each once"
            assert {p for _, p, _, _ in second.records} == {p for _, p in second.assignment}
        wait_until(lambda: first.assignment == everything, "every partition back with the member that stayed", 30)
        first_member.commit(topic, dict.fromkeys(range(4), 20))
    lags = kafka_cluster.api("GET", group_path(group, "/lags"))["data"]
    assert sorted((e["partition_id"], e["current_offset"], e["lag"]) for e in lags) == [(p, 20, 0) for p in range(4)]


def test_an_http_member_and_a_consumer_protocol_member_share_one_group(kafka_cluster: Cluster) -> None:
    topic, group = "kip848-mixed", "kip848-mixed-group"
    kafka_cluster.create_topic(topic, partitions=2, configs=MIN_ISR_2)
    http_member = Member(kafka_cluster, group, "http-member", [topic], via=2)
    with member(kafka_cluster, group, topic) as joined:
        kafka_member = joined.polling
        wait_until(lambda: len(kafka_member.assignment) == 2, "the Kafka member owns both partitions", 30)

        def shared() -> bool:
            http_member.beat()
            return len(http_member.owned) == 1 and len(kafka_member.assignment) == 1

        wait_until(shared, "one partition each", 30)
        assert not set(http_member.owned) & set(kafka_member.assignment)
        described = _described(kafka_cluster, group)
        assert described.type == ConsumerGroupType.CONSUMER
        assert len(described.members) == 2 and "http-member" in {m.member_id for m in described.members}
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
        listed = admin.list_consumer_groups().result(timeout=20)
        assert [g.type for g in listed.valid if g.group_id == group] == [ConsumerGroupType.CONSUMER]
        http_member.epoch = -1
        http_member.beat()
        wait_until(lambda: len(kafka_member.assignment) == 2, "both partitions back with the Kafka member", 30)


def _described(cluster: Cluster, group: str) -> Any:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    return admin.describe_consumer_groups([group])[group].result(timeout=20)
