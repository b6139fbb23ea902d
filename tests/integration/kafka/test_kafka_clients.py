"""Real Kafka clients against a real 3-broker RF 3 cluster through the brokers' Kafka listeners.

kafka-python and confluent-kafka (librdkafka) produce with acks 0, 1 and all and read
back from an offset with ``assign`` (no consumer group: groups are a later step, and
neither client needs a coordinator for assign-only reading). Records cross between the
two doors with keys, headers and timestamps intact, ListOffsets answers earliest,
latest (= HW) and by timestamp, and records a paused ISR has not copied stay
invisible to a Kafka consumer until the followers resume: reads stop at the HW.

kafka-python's acks 0 and 1 producers run with ``enable_idempotence=False`` (the client
allows idempotence with acks=all only); its acks=all producers keep the client's
default, idempotence on (``test_kadmin_clients.py`` checks the producer ids).
"""

from __future__ import annotations

import base64
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # type: ignore[import-untyped]
from kio.schema.errors import ErrorCode

from tests.integration.kafka.conftest import KAFKA_SPEC, MIN_ISR_2
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster, Clusters
from tests.support.waiting import wait_until
from tests.unit.kafka import requests

pytestmark = pytest.mark.integration


def read_with_kafka_python(bootstrap: str, topic: str, count: int, offset: int = 0, timeout_s: float = 20) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek(partition, offset)
        records: list = []
        deadline = time.monotonic() + timeout_s
        while len(records) < count and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records += batch
        return records
    finally:
        consumer.close()


def test_metadata_from_one_broker_lists_every_brokers_kafka_address(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("kafka-metadata", partitions=3, configs=MIN_ISR_2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap(2)})
    metadata = admin.list_topics(timeout=10)
    assert {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()} == kafka_cluster.kafka_addresses
    assert metadata.cluster_id == kafka_cluster.cluster_id
    partitions = metadata.topics["kafka-metadata"].partitions
    assert sorted(partitions) == [0, 1, 2]
    assert all(sorted(p.replicas) == [1, 2, 3] and sorted(p.isrs) == [1, 2, 3] for p in partitions.values())
    assert admin.list_topics(topic="no-such-topic", timeout=10).topics["no-such-topic"].error is not None


def test_the_http_brokers_list_gives_each_brokers_kafka_address(kafka_cluster: Cluster) -> None:
    reply = kafka_cluster.api("GET", "/brokers")
    assert {b["broker_id"]: b["kafka_address"] for b in reply["data"]} == kafka_cluster.kafka_addresses


def test_kafka_python_produces_with_acks_0_1_and_all_and_reads_back_from_an_offset(
    kafka_cluster: Cluster,
) -> None:
    kafka_cluster.create_topic("kafka-python-acks", configs=MIN_ISR_2)
    offsets: list[int] = []
    for acks in (1, "all", 0):
        producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), acks=acks, enable_idempotence=False)
        futures = [
            producer.send(
                "kafka-python-acks", key=f"k-{acks}-{i}".encode(), value=f"v-{acks}-{i}".encode(), partition=0
            )
            for i in range(5)
        ]
        producer.flush(timeout=20)
        if acks != 0:
            offsets += [future.get(timeout=10).offset for future in futures]
        producer.close()
    assert offsets == list(range(10))
    records = read_with_kafka_python(kafka_cluster.bootstrap(), "kafka-python-acks", 15)
    assert [r.offset for r in records] == list(range(15))
    expected = [f"v-{acks}-{i}".encode() for acks in (1, "all", 0) for i in range(5)]
    assert [r.value for r in records] == expected
    assert read_with_kafka_python(kafka_cluster.bootstrap(), "kafka-python-acks", 5, offset=10)[0].key == b"k-0-0"


def test_confluent_kafka_produces_with_acks_0_1_and_all_and_consumes_with_assign(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("librdkafka-acks", configs=MIN_ISR_2)
    delivered: list = []
    for acks in ("1", "all", "0"):
        producer = Producer(
            {"bootstrap.servers": kafka_cluster.bootstrap(), "acks": acks, "enable.idempotence": False, "linger.ms": 5}
        )
        for i in range(5):
            producer.produce(
                "librdkafka-acks",
                key=f"k-{acks}-{i}",
                value=f"v-{acks}-{i}",
                partition=0,
                headers=[("acks", acks.encode())],
                on_delivery=lambda error, message: delivered.append((error, message.offset())),
            )
        assert producer.flush(20) == 0
    assert [error for error, _ in delivered] == [None] * 15
    assert [offset for _, offset in delivered[:10]] == list(range(10))
    consumer = Consumer(
        {"bootstrap.servers": kafka_cluster.bootstrap(), "group.id": "assign-only", "enable.auto.commit": False}
    )
    try:
        consumer.assign([CkTopicPartition("librdkafka-acks", 0, 0)])
        messages: list = []
        deadline = time.monotonic() + 20
        while len(messages) < 15 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                messages.append(message)
        assert [m.offset() for m in messages] == list(range(15))
        assert [m.value() for m in messages] == [f"v-{a}-{i}".encode() for a in ("1", "all", "0") for i in range(5)]
        assert messages[12].headers() == [("acks", b"0")]
        low, high = consumer.get_watermark_offsets(CkTopicPartition("librdkafka-acks", 0), timeout=10)
        assert (low, high) == (0, 15)
    finally:
        consumer.close()


def test_records_cross_between_http_and_kafka_with_keys_headers_and_timestamps(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("two-doors", configs=MIN_ISR_2)
    http_record = {
        "partition_id": 0,
        "key": {"type": "STRING", "data": "http-key"},
        "value": {"type": "STRING", "data": "from-http"},
        "headers": [{"name": "origin", "value": base64.b64encode(b"http").decode()}],
        "timestamp": 1_700_000_000_123,
    }
    kafka_cluster.api("POST", "/topics/two-doors/records?acks=all", http_record)
    [seen] = read_with_kafka_python(kafka_cluster.bootstrap(), "two-doors", 1)
    assert (seen.key, seen.value, seen.headers, seen.timestamp) == (
        b"http-key",
        b"from-http",
        [("origin", b"http")],
        1_700_000_000_123,
    )

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "acks": "all", "enable.idempotence": False})
    producer.produce(
        "two-doors",
        key=b"kafka-key",
        value=b"from-kafka",
        partition=0,
        headers=[("origin", b"kafka")],
        timestamp=1_700_000_999_456,
    )
    assert producer.flush(20) == 0
    page = kafka_cluster.api("GET", "/topics/two-doors/partitions/0/records?offset=1&format=string")
    [record] = page["data"]
    assert (record["key"]["data"], record["value"]["data"], record["timestamp"]) == (
        "kafka-key",
        "from-kafka",
        1_700_000_999_456,
    )
    assert [(h["name"], base64.b64decode(h["value"])) for h in record["headers"]] == [("origin", b"kafka")]


def test_list_offsets_earliest_latest_and_by_timestamp(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("kafka-offsets", configs=MIN_ISR_2)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), acks="all")
    for i, timestamp_ms in enumerate((1_000_000, 2_000_000, 3_000_000)):
        producer.send("kafka-offsets", value=b"v%d" % i, partition=0, timestamp_ms=timestamp_ms)
        producer.flush(timeout=20)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka_cluster.bootstrap(), enable_auto_commit=False, group_id=None)
    try:
        partition = TopicPartition("kafka-offsets", 0)
        assert consumer.beginning_offsets([partition]) == {partition: 0}
        assert consumer.end_offsets([partition]) == {partition: 3}
        found = consumer.offsets_for_times({partition: 1_500_000})[partition]
        assert found is not None and found.offset == 1
        assert consumer.offsets_for_times({partition: 3_000_001})[partition] is None
    finally:
        consumer.close()


def test_records_a_paused_isr_lacks_stay_invisible_to_a_kafka_consumer_until_it_resumes(clusters: Clusters) -> None:
    kafka_cluster = clusters.start(KAFKA_SPEC)  # its followers are paused: a cluster of its own
    [description] = kafka_cluster.create_topic("kafka-visibility", configs=MIN_ISR_2).values()
    leader = description.leader_id
    committed = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(leader), acks="all")
    committed.send("kafka-visibility", value=b"committed", partition=0).get(timeout=20)
    committed.close()
    consumer = KafkaConsumer(bootstrap_servers=kafka_cluster.bootstrap(leader), enable_auto_commit=False, group_id=None)
    partition = TopicPartition("kafka-visibility", 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    seen = [r.value for batch in consumer.poll(timeout_ms=5000).values() for r in batch]
    assert seen == [b"committed"]
    # The producer learns the cluster's metadata before the followers stop: a metadata request
    # kafka-python sent to a paused broker would wait for its timeout, again and again.
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(leader), acks=1, enable_idempotence=False)
    assert producer.partitions_for("kafka-visibility") == {0}
    followers = [kafka_cluster.brokers[b] for b in (1, 2, 3) if b != leader]
    for follower in followers:
        follower.pause()
    try:
        acknowledged = [producer.send("kafka-visibility", value=b"tail-%d" % i, partition=0) for i in range(3)]
        assert [f.get(timeout=10).offset for f in acknowledged] == [1, 2, 3]
        producer.close()
        assert consumer.end_offsets([partition]) == {partition: 1}, "latest is the HW, not the leader's LEO"
        assert consumer.poll(timeout_ms=1000) == {}, "a record above the HW reached a Kafka consumer"
    finally:
        for follower in followers:
            follower.resume()
    tail: list[bytes] = []

    def whole_tail() -> bool:
        tail.extend(r.value for b in consumer.poll(timeout_ms=200).values() for r in b)
        return len(tail) >= 3

    wait_until(whole_tail, "the tail", 20)
    consumer.close()
    assert tail == [b"tail-0", b"tail-1", b"tail-2"]


def test_leader_epochs_over_kafka_come_from_the_leaders_own_state(kafka_cluster: Cluster) -> None:
    """OffsetForLeaderEpoch answers from the leader's epoch cache; an epoch the leader does not have
    yet is refused on Fetch (a new topic is at epoch 0, so "older" is unit-tested), and a broker that does not lead the partition says so instead of serving it."""
    [description] = kafka_cluster.create_topic("kafka-epochs", configs=MIN_ISR_2).values()
    leader, epoch = description.leader_id, description.leader_epoch
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), acks="all")
    for i in range(3):
        producer.send("kafka-epochs", value=b"v%d" % i, partition=0).get(timeout=20)
    producer.close()
    connection = Connection(kafka_cluster.kafka_addresses[leader])
    try:
        [answer] = connection.call(requests.offset_for_leader_epoch(4, "kafka-epochs", epoch)).topics[0].partitions
        assert (answer.error_code, answer.leader_epoch, answer.end_offset) == (ErrorCode.none, epoch, 3)
        ahead = connection.call(requests.fetch(12, "kafka-epochs", 0, current_leader_epoch=epoch + 1))
        assert ahead.responses[0].partitions[0].error_code == ErrorCode.unknown_leader_epoch
        current = connection.call(requests.fetch(12, "kafka-epochs", 0, current_leader_epoch=epoch))
        [part] = current.responses[0].partitions
        assert (part.error_code, part.high_watermark, part.last_stable_offset) == (ErrorCode.none, 3, 3)
    finally:
        connection.close()
    follower = next(b for b in (1, 2, 3) if b != leader)
    elsewhere = Connection(kafka_cluster.kafka_addresses[follower])
    try:
        answer = elsewhere.call(requests.fetch(12, "kafka-epochs", 0))
        assert answer.responses[0].partitions[0].error_code == ErrorCode.not_leader_or_follower
    finally:
        elsewhere.close()
