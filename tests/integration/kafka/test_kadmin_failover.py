"""An idempotent librdkafka producer across a SIGKILL of the partition leader: every acknowledged record
is in the log exactly once, and no record is there twice.

Records are in flight when the leader dies: some reached the followers (and survive
on the new leader) without their acknowledgement reaching the client, so librdkafka
retries them to the new leader with the same producer id and sequences. The new
leader's producer state, rebuilt from its log, answers those retries with their
original offsets instead of appending them again. Whether a run lands such a retry
depends on timing (a run logs ``produce.duplicate_ignored`` when it does); the retry
itself is pinned deterministically over the wire in ``test_kadmin_clients``. The
cluster is this module's own: a broker stays dead for the rest of it.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition

from broker.record.header import iter_batches
from tests.integration.kafka.conftest import KAFKA_SPEC, MIN_ISR_2
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster, cluster_fixture
from tests.support.waiting import wait_until
from tests.unit.kafka import requests

pytestmark = pytest.mark.integration

kafka_cluster = cluster_fixture(KAFKA_SPEC)
"""A cluster of the test's own: it kills a broker."""

TOPIC = "idempotent-failover"
KILL_AFTER_ACKNOWLEDGED = 500
"""The leader is killed once this many records are acknowledged, while later ones are in flight."""
RECORDS_AFTER_KILL = 2000


def read_all(bootstrap: str, end_offset: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "failover-check", "enable.auto.commit": False})
    try:
        consumer.assign([CkTopicPartition(TOPIC, 0, 0)])
        keys: list[bytes] = []
        next_offset = 0
        deadline = time.monotonic() + 60
        while next_offset < end_offset and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            key, offset = message.key(), message.offset()
            assert key is not None and offset is not None
            keys.append(key)
            next_offset = offset + 1
        assert next_offset == end_offset, f"read up to {next_offset} of {end_offset}"
        return keys
    finally:
        consumer.close()


def test_an_idempotent_producer_across_a_leader_sigkill_loses_and_duplicates_nothing(
    kafka_cluster: Cluster,
) -> None:
    [description] = kafka_cluster.create_topic(TOPIC, configs=MIN_ISR_2).values()
    old_leader = description.leader_id
    producer = Producer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap(),
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 120_000,
        }
    )
    acknowledged: list[bytes] = []
    failed: list[tuple[bytes, str]] = []

    def on_delivery(error: object, message: object) -> None:
        key = message.key()  # type: ignore[attr-defined]
        (failed.append((key, str(error))) if error is not None else acknowledged.append(key))

    def produce(i: int) -> None:
        producer.produce(TOPIC, key=b"key-%05d" % i, value=b"value-%05d" % i, partition=0, on_delivery=on_delivery)
        producer.poll(0)

    sent = 0
    while len(acknowledged) < KILL_AFTER_ACKNOWLEDGED:
        produce(sent)
        sent += 1
        producer.poll(0.001)
    kafka_cluster.brokers[old_leader].kill()
    for _ in range(RECORDS_AFTER_KILL):
        produce(sent)
        sent += 1
    assert producer.flush(120) == 0
    assert failed == [], failed[:5]
    assert len(acknowledged) == sent

    survivors = [b for b in sorted(kafka_cluster.kafka_addresses) if b != old_leader]
    partition_path = f"/topics/{TOPIC}/partitions/0"

    def new_leader() -> dict | None:
        status, reply = kafka_cluster.v3("GET", partition_path, timeout_s=5)
        return reply if status == 200 and reply["leader_id"] in survivors else None

    leader = wait_until(new_leader, "a new leader", 30)["leader_id"]
    end_offset = kafka_cluster.api("GET", f"{partition_path}/offset")["latest_offset"]
    keys = read_all(kafka_cluster.bootstrap(*survivors), end_offset)
    counts = Counter(keys)
    assert [key for key, count in counts.items() if count > 1] == [], "a record is in the log twice"
    assert set(acknowledged) <= set(counts), "an acknowledged record is missing"
    assert len(keys) == sent

    connection = Connection(kafka_cluster.kafka_addresses[leader])
    try:
        fetched = connection.call(requests.fetch(12, TOPIC, 0)).responses[0].partitions[0].records
    finally:
        connection.close()
    ranges = sorted(
        (b.producer_id, b.base_sequence, b.base_sequence + b.last_offset_delta) for b in iter_batches(fetched)
    )
    assert all(a[0] != b[0] or a[2] < b[1] for a, b in itertools.pairwise(ranges)), "a sequence was appended twice"
