"""The group APIs authorized at the Kafka door, with confluent-kafka on a secured 3-broker cluster.

On top of ``add_alice_and_mallory``'s users (``alice`` may READ and WRITE ``orders-*``):
``alice`` may also READ the group ``kg-readers``; ``bob`` may READ the topic
``orders-eu`` and no group. ``alice`` consumes with ``subscribe`` and commits, and sees
her commit over HTTP; ``bob``'s consumer is told ``GROUP_AUTHORIZATION_FAILED`` (librdkafka
hands the FindCoordinator refusal to the application as a consumer error event, which
``poll`` returns as a message whose ``error()`` carries the code), and the HTTP API
refuses him the same group with 403.
"""

from __future__ import annotations

import time
from contextlib import closing

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.kafka.secured import (
    ALICE_PASSWORD,
    TOPIC,
    add_acl,
    add_alice_and_mallory,
    add_user,
    secured_kafka_spec,
    statuses_everywhere,
)
from tests.support.cluster import Cluster, cluster_fixture
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

BOB_PASSWORD = "bob-pw-4"
GROUP = "kg-readers"
COUNT = 5
TIMEOUT_S = 60
"""A bound, not a wait: generous because the suite shares two cores with other clusters."""


cluster = cluster_fixture(secured_kafka_spec(kafka_tls=False), scope="module")


@pytest.fixture(scope="module")
def secured(cluster: Cluster) -> Cluster:
    add_alice_and_mallory(cluster)
    add_user(cluster, "bob", BOB_PASSWORD)
    add_acl(cluster, "User:bob", "READ", "TOPIC", TOPIC)
    add_acl(cluster, "User:alice", "READ", "GROUP", GROUP)

    def everywhere() -> bool:
        """Every broker applied alice's group ACL (the last one added: 404, the group is not there yet,
        is no longer 403) and knows bob."""
        alice = statuses_everywhere(cluster, f"/consumer-groups/{GROUP}", "alice", ALICE_PASSWORD)
        return alice == {404} and statuses_everywhere(cluster, f"/topics/{TOPIC}", "bob", BOB_PASSWORD) == {200}

    wait_until(everywhere, "bob and alice's group ACL on every broker", TIMEOUT_S)
    return cluster


def config(secured: Cluster, username: str, password: str) -> dict[str, str | int | float | bool]:
    return {
        "bootstrap.servers": secured.bootstrap(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": username,
        "sasl.password": password,
    }


def consumer(secured: Cluster, username: str, password: str) -> Consumer:
    return Consumer(
        {
            **config(secured, username, password),
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 200,
        }
    )


def produce(secured: Cluster) -> None:
    producer = Producer({**config(secured, "alice", ALICE_PASSWORD), "acks": "all"})
    delivered: list = []
    for index in range(COUNT):
        producer.produce(TOPIC, value=b"v%d" % index, partition=0, on_delivery=lambda e, _: delivered.append(e))
    assert producer.flush(TIMEOUT_S) == 0
    assert delivered == [None] * COUNT


def listed_groups(secured: Cluster, username: str, password: str) -> set[str]:
    """The groups ListGroups shows ``username`` on every broker (the client is kept until the answer is in)."""
    admin = AdminClient(config(secured, username, password))
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert listed.errors == []
    return {group.group_id for group in listed.valid}


def test_a_user_with_read_on_the_group_consumes_with_subscribe_and_commits(secured: Cluster) -> None:
    produce(secured)
    values: list[bytes] = []
    with closing(consumer(secured, "alice", ALICE_PASSWORD)) as alice:
        alice.subscribe([TOPIC])
        deadline = time.monotonic() + TIMEOUT_S
        while len(values) < COUNT and time.monotonic() < deadline:
            message = alice.poll(0.2)
            if message is not None:
                value = message.value()
                assert message.error() is None and value is not None, message.error()
                values.append(value)
        assert values == [b"v%d" % index for index in range(COUNT)]
        alice.commit(asynchronous=False)
        committed = alice.committed([TopicPartition(TOPIC, 0)], timeout=TIMEOUT_S)
        assert [(tp.offset, tp.error) for tp in committed] == [(COUNT, None)]
    status, reply = secured.v3(
        "GET", f"/consumer-groups/{GROUP}/offsets", headers=secured.headers("alice", ALICE_PASSWORD)
    )
    assert status == 200, reply
    assert [(row["topic_name"], row["offset"]) for row in reply["data"]] == [(TOPIC, COUNT)]

    assert GROUP in listed_groups(secured, "alice", ALICE_PASSWORD)


def test_a_user_without_the_group_acl_is_refused_by_its_consumer_and_over_http(secured: Cluster) -> None:
    errors: list[int] = []
    with closing(consumer(secured, "bob", BOB_PASSWORD)) as bob:
        bob.subscribe([TOPIC])
        deadline = time.monotonic() + TIMEOUT_S
        while not errors and time.monotonic() < deadline:
            message = bob.poll(0.2)
            if message is not None:
                error = message.error()
                assert error is not None, "bob read a record without the group ACL"
                errors.append(error.code())
        assert bob.assignment() == []
    assert errors == [KafkaError.GROUP_AUTHORIZATION_FAILED]
    bob_headers = secured.headers("bob", BOB_PASSWORD)
    assert secured.v3("GET", f"/consumer-groups/{GROUP}", headers=bob_headers)[0] == 403
    commit = {"member_id": "", "member_epoch": -1, "offsets": [{"topic_name": TOPIC, "partition_id": 0, "offset": 0}]}
    assert secured.v3("POST", f"/consumer-groups/{GROUP}/offsets", commit, headers=bob_headers)[0] == 403

    assert GROUP not in listed_groups(secured, "bob", BOB_PASSWORD)
    assert "audit.denied" in secured.logs()
