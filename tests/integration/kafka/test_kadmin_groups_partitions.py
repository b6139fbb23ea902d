"""CreatePartitions, DeleteGroups and OffsetDelete from real Kafka admin clients (librdkafka, kafka-python),
against a real 3-broker RF 3 cluster; each call's effect checked over HTTP.
"""

from __future__ import annotations

import time
from contextlib import closing

import pytest
from confluent_kafka import Consumer, ElectionType, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions
from kafka import TopicPartition  # type: ignore[import-untyped]
from kafka.admin import KafkaAdminClient  # type: ignore[import-untyped]
from kafka.errors import GroupSubscribedToTopicError, NoError  # type: ignore[import-untyped]

from tests.integration.kafka.conftest import MIN_ISR_2
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration

TIMEOUT_S = 20


def test_create_partitions_grows_a_topic_and_refuses_to_shrink_it(kafka_cluster: Cluster) -> None:
    topic = "adm-grow"
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    admin.create_partitions([NewPartitions(topic, 5)], validate_only=True)[topic].result(TIMEOUT_S)
    assert len(kafka_cluster.partitions(topic)) == 1, "validate only: nothing created"
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(TIMEOUT_S)
    assert sorted(kafka_cluster.wait_for_topic(topic, 3)) == [0, 1, 2]
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(TIMEOUT_S)
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PART"):
        admin.create_partitions([NewPartitions("adm-missing", 2)])["adm-missing"].result(TIMEOUT_S)
    assert len(kafka_cluster.partitions(topic)) == 3


def commit_over_http(cluster: Cluster, group: str, topic: str, offsets: dict[int, int]) -> None:
    body = {"offsets": [{"topic_name": topic, "partition_id": p, "offset": o} for p, o in offsets.items()]}
    status, answer = cluster.v3("POST", f"/consumer-groups/{group}/offsets", body)
    assert status == 200, answer


def committed(cluster: Cluster, group: str) -> dict[tuple[str, int], int]:
    data = cluster.api("GET", f"/consumer-groups/{group}/offsets")["data"]
    return {(entry["topic_name"], entry["partition_id"]): entry["offset"] for entry in data}


def test_offset_delete_and_delete_groups_on_an_empty_group(kafka_cluster: Cluster) -> None:
    topic, group = "adm-offsets", "adm-empty-group"
    kafka_cluster.create_topic(topic, partitions=2, configs=MIN_ISR_2)
    kafka_cluster.produce(topic, ["a", "b"], partition=0)
    kafka_cluster.produce(topic, ["c"], partition=1)
    commit_over_http(kafka_cluster, group, topic, {0: 2, 1: 1})
    with closing(KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())) as admin:
        answer = admin.delete_group_offsets(group, [TopicPartition(topic, 0), TopicPartition(topic, 7)])
        assert answer[TopicPartition(topic, 0)] is NoError
        assert answer[TopicPartition(topic, 7)].__name__ == "UnknownTopicOrPartitionError"
    assert committed(kafka_cluster, group) == {(topic, 1): 1}

    rdkafka = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    rdkafka.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
    status, answer = kafka_cluster.v3("GET", f"/consumer-groups/{group}")
    assert (status, answer["error_code"]) == (404, 40411), "gone with every offset"
    with pytest.raises(KafkaException, match="GROUP_ID_NOT_FOUND"):
        rdkafka.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)


def test_a_group_with_members_keeps_itself_and_its_subscribed_offsets(kafka_cluster: Cluster) -> None:
    subscribed, other, group = "adm-subscribed", "adm-other", "adm-live-group"
    for topic in (subscribed, other):
        kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
        kafka_cluster.produce(topic, ["x", "y"])
    member = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap(),
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
        }
    )
    try:
        member.subscribe([subscribed])
        deadline = time.monotonic() + TIMEOUT_S
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        assert member.assignment(), "the member joined"
        member.commit(offsets=[RdTopicPartition(subscribed, 0, 1), RdTopicPartition(other, 0, 2)], asynchronous=False)
        with closing(KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())) as admin:
            answer = admin.delete_group_offsets(group, [TopicPartition(subscribed, 0), TopicPartition(other, 0)])
        assert answer[TopicPartition(subscribed, 0)] is GroupSubscribedToTopicError
        assert answer[TopicPartition(other, 0)] is NoError
        assert committed(kafka_cluster, group) == {(subscribed, 0): 1}
        rdkafka = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
        with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
            rdkafka.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group].result(TIMEOUT_S)
    finally:
        member.close()


def test_elect_leaders_moves_leadership_to_the_preferred_replica(kafka_cluster: Cluster) -> None:
    topic = "adm-elect"
    (state,) = kafka_cluster.create_topic(topic, configs=MIN_ISR_2).values()
    leader = state.leader_id
    reordered = [
        *[b for b in state.replicas if b != leader][:1],
        leader,
        *[b for b in state.replicas if b != leader][1:],
    ]
    moves = {"data": [{"topic_name": topic, "partition_id": 0, "replicas": reordered}]}
    status, answer = kafka_cluster.v3("POST", "/topics/-/partitions/-/reassignment:alter", moves)
    assert status == 202, answer
    kafka_cluster.wait_until(lambda: kafka_cluster.partitions(topic)[0].replicas == reordered, "the replicas reordered")
    assert kafka_cluster.partitions(topic)[0].leader_id == leader, "a reorder moves no leadership"

    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    partition = RdTopicPartition(topic, 0)
    elected = admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(TIMEOUT_S)
    assert list(elected.values()) == [None]
    kafka_cluster.wait_until(
        lambda: kafka_cluster.partitions(topic)[0].leader_id == reordered[0], "every broker to know the new leader"
    )
    again = admin.elect_leaders(ElectionType.PREFERRED, [partition]).result(TIMEOUT_S)
    assert "ELECTION_NOT_NEEDED" in str(again[partition])
    unclean = admin.elect_leaders(ElectionType.UNCLEAN, [partition]).result(TIMEOUT_S)
    assert "INVALID_REQUEST" in str(unclean[partition]) and "unclean.leader.election.enable" in str(unclean[partition])
    missing = RdTopicPartition(topic, 9)
    unknown = admin.elect_leaders(ElectionType.PREFERRED, [missing]).result(TIMEOUT_S)
    assert "UNKNOWN_TOPIC_OR_PART" in str(unknown[missing])
