"""With ``authentication = "mtls"`` the Kafka listener speaks TLS and the client certificate names the user.

One broker, as the HTTP side's mTLS test: confluent-kafka over ``SSL`` with the
certificate whose CN is ``alice`` produces to and reads from the topic alice's ACLs
allow, and is refused (``TOPIC_AUTHORIZATION_FAILED``) on a topic they do not — so
the principal is the certificate's user, and the ACLs are the HTTP door's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition

from tests.integration.kafka.conftest import KAFKA_SETTINGS
from tests.integration.kafka.secured import add_acl
from tests.support.cluster import Cluster, ClusterSpec
from tests.support.pki import CLIENT_CN, Pki

pytestmark = pytest.mark.integration

ALLOWED, OTHER = "certified", "uncertified"
SPEC = ClusterSpec(
    brokers=1,
    tls=True,
    kafka=True,
    settings={
        **KAFKA_SETTINGS,
        "tls.client_auth": "required",
        "security.authentication": "mtls",
        "kafka_listener_tls": True,
    },
)


@pytest.fixture(scope="module")
def mtls_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Pki]]:
    cluster = Cluster(SPEC, tmp_path_factory.mktemp("kafka-mtls"))
    # Added offline, before the broker starts: with mTLS only a certificate's user reaches the broker.
    for operation, resource_type, name in (
        ("CREATE", "CLUSTER", "kafka-cluster"),
        ("DESCRIBE", "CLUSTER", "kafka-cluster"),
        ("WRITE", "TOPIC", ALLOWED),
        ("READ", "TOPIC", ALLOWED),
    ):
        add_acl(cluster, f"User:{CLIENT_CN}", operation, resource_type, name, offline=True)
    cluster.start()
    try:
        cluster.create_topic(ALLOWED)
        status, reply = cluster.v3(
            "POST", "/topics", {"topic_name": OTHER, "partitions_count": 1, "replication_factor": 1}
        )
        assert status == 201, reply  # alice may create it but not describe it: create_topic could not wait
        assert cluster.pki is not None
        yield cluster.bootstrap(), cluster.pki
    finally:
        cluster.shutdown()


def config(address: str, pki: Pki) -> dict[str, str | int | float | bool]:
    return {
        "bootstrap.servers": address,
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki.ca_file),
        "ssl.certificate.location": str(pki.client_cert),
        "ssl.key.location": str(pki.client_key),
    }


def test_the_certificates_user_produces_and_reads_what_its_acls_allow(mtls_kafka: tuple[str, Pki]) -> None:
    address, pki = mtls_kafka
    producer = Producer({**config(address, pki), "acks": "all", "enable.idempotence": False})
    reports: list = []
    for topic in (ALLOWED, OTHER):
        producer.produce(topic, value=b"signed", partition=0, on_delivery=lambda e, m: reports.append((m.topic(), e)))
    producer.flush(30)
    outcome = {topic: error.code() if error else None for topic, error in reports}
    assert outcome == {ALLOWED: None, OTHER: KafkaError.TOPIC_AUTHORIZATION_FAILED}

    consumer = Consumer({**config(address, pki), "group.id": "assign-only", "enable.auto.commit": False})
    try:
        consumer.assign([CkTopicPartition(ALLOWED, 0, 0)])
        message = None
        deadline = time.monotonic() + 20
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                # librdkafka looks up the group's coordinator even for assigned partitions; alice may not
                # DESCRIBE the group, so that lookup is refused, as Kafka refuses it, whenever it lands.
                error = message.error()
                assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, error
                message = None
        assert message is not None and message.value() == b"signed"
    finally:
        consumer.close()
