"""confluent-kafka (librdkafka) over SASL_SSL with SCRAM-SHA-512 against a secured 3-broker cluster.

The users, ACLs and credential store are the HTTP API's: alice (READ and WRITE on
``orders-*``) produces with acks=all and consumes with assign; a wrong password is
refused with an authentication error the broker logs (without the password);
mallory, who has a password and no ACL, gets ``TOPIC_AUTHORIZATION_FAILED`` on
produce and fetch, while the HTTP API answers her 403 for the same topic. kcat (Debian's,
on librdkafka) does the same SCRAM-over-TLS round trip and is refused a wrong password.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka import TopicPartition as CkTopicPartition

from tests.integration.kafka.secured import (
    ALICE_PASSWORD,
    MALLORY_PASSWORD,
    TOPIC,
    add_acl,
    add_alice_and_mallory,
    ca_file,
    secured_kafka_spec,
    statuses_everywhere,
)
from tests.support.cluster import Cluster, cluster_fixture
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


cluster = cluster_fixture(secured_kafka_spec(kafka_tls=True), scope="module")


@pytest.fixture(scope="module")
def secured(cluster: Cluster) -> Cluster:
    add_alice_and_mallory(cluster)
    # librdkafka asks for the coordinator of its group.id even for an assign-only consumer;
    # Kafka answers GROUP_AUTHORIZATION_FAILED without READ on the group, and so does highwater.
    add_acl(cluster, "User:alice", "READ", "GROUP", "assign-only")
    wait_until(
        lambda: statuses_everywhere(cluster, "/consumer-groups/assign-only", "alice", ALICE_PASSWORD) == {404},
        "alice's group ACL on every broker",
        30,
    )
    return cluster


def client_config(secured: Cluster, username: str, password: str) -> dict:
    return {
        "bootstrap.servers": secured.bootstrap(),
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": username,
        "sasl.password": password,
        "ssl.ca.location": str(ca_file(secured)),
    }


def produce(secured: Cluster, username: str, password: str, values: list[bytes]) -> list:
    producer = Producer({**client_config(secured, username, password), "acks": "all", "enable.idempotence": False})
    reports: list = []
    for value in values:
        producer.produce(TOPIC, value=value, partition=0, on_delivery=lambda e, m: reports.append((e, m.offset())))
    producer.flush(30)
    return reports


def consume(secured: Cluster, username: str, password: str, count: int, timeout_s: float = 20) -> list:
    consumer = Consumer({**client_config(secured, username, password), "group.id": "assign-only"})
    try:
        consumer.assign([CkTopicPartition(TOPIC, 0, 0)])
        messages: list = []
        deadline = time.monotonic() + timeout_s
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                messages.append(message)
        return messages
    finally:
        consumer.close()


def test_scram_over_tls_produces_with_acks_all_and_consumes(secured: Cluster) -> None:
    values = [f"order-{i}".encode() for i in range(10)]
    reports = produce(secured, "alice", ALICE_PASSWORD, values)
    assert [error for error, _ in reports] == [None] * 10
    messages = consume(secured, "alice", ALICE_PASSWORD, 10)
    assert [m.error() for m in messages] == [None] * 10
    assert [m.value() for m in messages][-10:] == values


def test_a_wrong_password_is_refused_and_logged_without_the_password(secured: Cluster) -> None:
    errors: list[KafkaError] = []
    producer = Producer(
        {**client_config(secured, "alice", "not-alices-password"), "error_cb": errors.append, "acks": "all"}
    )
    producer.produce(TOPIC, value=b"never", partition=0)
    deadline = time.monotonic() + 20
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and time.monotonic() < deadline:
        producer.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert producer.flush(0) == 1  # nothing was delivered
    logs = secured.logs()
    assert "audit.authentication_failed" in logs and "SCRAM-SHA-512" in logs
    assert "not-alices-password" not in logs


def test_a_user_without_the_topics_acl_is_refused_over_kafka_and_http_alike(secured: Cluster) -> None:
    reports = produce(secured, "mallory", MALLORY_PASSWORD, [b"sneaky"])
    assert [error.code() for error, _ in reports] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # librdkafka asks a topic's metadata before it fetches; an assign-only consumer keeps the
    # refusal to itself (a "permanent error" on the topic), so it is read where the client shows it.
    # Fetch's own TOPIC_AUTHORIZATION_FAILED is pinned byte by byte in test_kafka_sasl_plaintext.
    consumer = Consumer({**client_config(secured, "mallory", MALLORY_PASSWORD), "group.id": "assign-only"})
    try:
        error = consumer.list_topics(TOPIC, timeout=20).topics[TOPIC].error
        assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    finally:
        consumer.close()

    mallory = secured.headers("mallory", MALLORY_PASSWORD)
    status, body = secured.v3("POST", f"/topics/{TOPIC}/records", {"value": {"data": 1}}, headers=mallory)
    assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")


def test_metadata_lists_only_the_topics_the_user_may_describe(secured: Cluster) -> None:
    alice = Producer(client_config(secured, "alice", ALICE_PASSWORD))
    mallory = Producer(client_config(secured, "mallory", MALLORY_PASSWORD))
    assert TOPIC in alice.list_topics(timeout=20).topics
    assert TOPIC not in mallory.list_topics(timeout=20).topics


def _kcat(secured: Cluster, username: str, password: str, *args: str, stdin: str | None = None):
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is missing: `make test` installs Debian's kcat"
    sasl = (
        "-X", "security.protocol=SASL_SSL",
        "-X", "sasl.mechanisms=SCRAM-SHA-512",
        "-X", f"sasl.username={username}",
        "-X", f"sasl.password={password}",
        "-X", f"ssl.ca.location={ca_file(secured)}",
    )  # fmt: skip
    return subprocess.run(
        [kcat, "-b", secured.bootstrap(), *sasl, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_kcat_produces_and_consumes_over_sasl_ssl_scram_and_a_wrong_password_is_refused(secured: Cluster) -> None:
    produced = _kcat(secured, "alice", ALICE_PASSWORD, "-P", "-t", TOPIC, "-p", "0", "-K", ":", stdin="kcat:over-tls\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _kcat(secured, "alice", ALICE_PASSWORD, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-J")
    assert consumed.returncode == 0, consumed.stderr
    messages = [json.loads(line) for line in consumed.stdout.splitlines() if line.strip()]
    assert ("kcat", "over-tls") in [(m["key"], m["payload"]) for m in messages]
    refused = _kcat(secured, "alice", "not-alices-password", "-L", "-m", "10")
    assert refused.returncode != 0
    assert "Authentication failed" in refused.stderr or "SASL authentication error" in refused.stderr, refused.stderr
