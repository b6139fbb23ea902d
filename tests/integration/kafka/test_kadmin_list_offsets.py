"""ListOffsets' offset specs from librdkafka's AdminClient, up to MAX_TIMESTAMP (v7, KIP-734)."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.integration.kafka.conftest import MIN_ISR_2
from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration

TIMEOUT_S = 20
BASE_MS = 1_700_000_000_000


def test_list_offsets_by_every_spec(kafka_cluster: Cluster) -> None:
    topic = "adm-list-offsets"
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    partition = TopicPartition(topic, 0)

    def listed(spec: OffsetSpec) -> tuple[int, int]:
        answer = admin.list_offsets({partition: spec}, request_timeout=TIMEOUT_S)[partition].result(TIMEOUT_S)
        return answer.offset, answer.timestamp

    assert listed(OffsetSpec.max_timestamp()) == (-1, -1), "no record yet"
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "acks": "all", "linger.ms": 0})
    for delta_ms in (5, 40, 7, 40, 3):  # offsets 0..4: the largest timestamp first at offset 1
        producer.produce(topic, value=b"v", partition=0, timestamp=BASE_MS + delta_ms)
        producer.flush(TIMEOUT_S)
    assert listed(OffsetSpec.max_timestamp()) == (1, BASE_MS + 40)
    assert listed(OffsetSpec.earliest())[0] == 0
    assert listed(OffsetSpec.latest())[0] == 5
    assert listed(OffsetSpec.for_timestamp(BASE_MS + 6))[0] == 1
