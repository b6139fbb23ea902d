"""With ``authentication = "mtls"`` the Kafka listener speaks TLS and the client certificate names the user.

One broker, as the HTTP side's mTLS test: confluent-kafka over ``SSL`` with the
certificate whose CN is ``alice`` produces to and reads from the topic alice's ACLs
allow, and is refused (``TOPIC_AUTHORIZATION_FAILED``) on a topic they do not — so
the principal is the certificate's user, and the ACLs are the HTTP door's.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition

from tests.integration.kafka.conftest import KAFKA_ENV
from tests.integration.kafka.secured import cli
from tests.support.brokers import BrokerProcess, free_port, http_json
from tests.support.pki import CLIENT_CN, Pki, make_pki

pytestmark = pytest.mark.integration

ALLOWED, OTHER = "certified", "uncertified"


def acl(store: str, operation: str, resource_type: str, name: str) -> None:
    cli(
        [
            "acls", "add", "--metadata", store, "--principal", f"User:{CLIENT_CN}", "--operation", operation,
            "--resource-type", resource_type, "--resource-name", name,
        ],
        {},
    )  # fmt: skip


@pytest.fixture(scope="module")
def mtls_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Pki]]:
    root: Path = tmp_path_factory.mktemp("kafka-mtls")
    pki = make_pki(root / "pki")
    store = f"sqlite://{(root / 'metadata.db').resolve()}"
    for operation, resource_type, name in (
        ("CREATE", "CLUSTER", "kafka-cluster"),
        ("DESCRIBE", "CLUSTER", "kafka-cluster"),
        ("WRITE", "TOPIC", ALLOWED),
        ("READ", "TOPIC", ALLOWED),
    ):
        acl(store, operation, resource_type, name)
    address = f"127.0.0.1:{free_port()}"
    broker = BrokerProcess(1, root / "broker-1", store)
    broker.env = {
        **KAFKA_ENV,
        **pki.broker_env(client_auth="required"),
        "HIGHWATER_SECURITY__AUTHENTICATION": "mtls",
        "HIGHWATER_KAFKA_LISTENER": address,
        "HIGHWATER_KAFKA_LISTENER_TLS": "true",
    }
    broker.ssl_context = pki.client_context()
    broker.start()
    try:
        status, clusters = http_json("GET", f"{broker.url}/v3/clusters", context=broker.ssl_context)
        assert status == 200, clusters
        topics = f"{broker.url}/v3/clusters/{clusters['data'][0]['cluster_id']}/topics"
        for name in (ALLOWED, OTHER):
            body = {"topic_name": name, "partitions_count": 1, "replication_factor": 1}
            status, reply = http_json("POST", topics, body, context=broker.ssl_context)
            assert status == 201, reply
        yield address, pki
    finally:
        broker.stop()


def config(address: str, pki: Pki) -> dict:
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
                assert message.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED, message.error()
                message = None
        assert message is not None and message.value() == b"signed"
    finally:
        consumer.close()
