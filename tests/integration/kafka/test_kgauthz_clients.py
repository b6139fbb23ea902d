"""The group APIs authorized at the Kafka door, with confluent-kafka on a secured 3-broker cluster.

On top of ``secured_kafka``'s users (``alice`` may READ and WRITE ``orders-*``):
``alice`` may also READ the group ``kg-readers``; ``bob`` may READ the topic
``orders-eu`` and no group. ``alice`` consumes with ``subscribe`` and commits, and sees
her commit over HTTP; ``bob``'s consumer is told ``GROUP_AUTHORIZATION_FAILED`` (librdkafka
hands the FindCoordinator refusal to the application as a consumer error event, which
``poll`` returns as a message whose ``error()`` carries the code), and the HTTP API
refuses him the same group with 403.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.integration.kafka.secured import ALICE_PASSWORD, TOPIC, SecuredKafka, basic, cli, secured_kafka
from tests.support.brokers import http_json
from tests.support.replication import wait_until

pytestmark = pytest.mark.integration

BOB_PASSWORD = "bob-pw-4"
GROUP = "kg-readers"
COUNT = 5
TIMEOUT_S = 60
"""A bound, not a wait: generous because the suite shares two cores with other clusters."""


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredKafka]:
    root: Path = tmp_path_factory.mktemp("kgauthz")
    with secured_kafka(root, kafka_tls=False) as secured:
        cli(["users", "add", "bob", "--password-stdin"], secured.admin_env, BOB_PASSWORD + "\n")
        for principal, resource_type, name in (("User:bob", "TOPIC", TOPIC), ("User:alice", "GROUP", GROUP)):
            cli(
                [
                    "acls", "add", "--principal", principal, "--operation", "READ",
                    "--resource-type", resource_type, "--resource-name", name,
                ],
                secured.admin_env,
            )  # fmt: skip

        def everywhere() -> bool:
            """Every broker applied alice's group ACL (the last one added: 404, the group is not there yet,
            is no longer 403) and knows bob."""
            context = secured.pki.client_context(with_certificate=False)
            cluster = f"/v3/clusters/{secured.cluster_id}"
            asked = [
                (f"/consumer-groups/{GROUP}", basic("alice", ALICE_PASSWORD), 404),
                (f"/topics/{TOPIC}", basic("bob", BOB_PASSWORD), 200),
            ]
            return all(
                http_json("GET", broker.url + cluster + path, context=context, headers=headers)[0] == status
                for broker in secured.cluster.brokers.values()
                for path, headers, status in asked
            )

        wait_until(everywhere, TIMEOUT_S, "bob and alice's group ACL on every broker")
        yield secured


def config(secured: SecuredKafka, username: str, password: str) -> dict[str, str]:
    return {
        "bootstrap.servers": secured.bootstrap(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": username,
        "sasl.password": password,
    }


def consumer(secured: SecuredKafka, username: str, password: str) -> Consumer:
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


def produce(secured: SecuredKafka) -> None:
    producer = Producer({**config(secured, "alice", ALICE_PASSWORD), "acks": "all"})
    delivered: list = []
    for index in range(COUNT):
        producer.produce(TOPIC, value=b"v%d" % index, partition=0, on_delivery=lambda e, _: delivered.append(e))
    assert producer.flush(TIMEOUT_S) == 0
    assert delivered == [None] * COUNT


def listed_groups(secured: SecuredKafka, username: str, password: str) -> set[str]:
    """The groups ListGroups shows ``username`` on every broker (the client is kept until the answer is in)."""
    admin = AdminClient(config(secured, username, password))
    listed = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert listed.errors == []
    return {group.group_id for group in listed.valid}


def test_a_user_with_read_on_the_group_consumes_with_subscribe_and_commits(secured: SecuredKafka) -> None:
    produce(secured)
    values: list[bytes] = []
    with closing(consumer(secured, "alice", ALICE_PASSWORD)) as alice:
        alice.subscribe([TOPIC])
        deadline = time.monotonic() + TIMEOUT_S
        while len(values) < COUNT and time.monotonic() < deadline:
            message = alice.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
        assert values == [b"v%d" % index for index in range(COUNT)]
        alice.commit(asynchronous=False)
        committed = alice.committed([TopicPartition(TOPIC, 0)], timeout=TIMEOUT_S)
        assert [(tp.offset, tp.error) for tp in committed] == [(COUNT, None)]
    status, reply = secured.http("GET", f"/consumer-groups/{GROUP}/offsets", basic("alice", ALICE_PASSWORD))
    assert status == 200, reply
    assert [(row["topic_name"], row["offset"]) for row in reply["data"]] == [(TOPIC, COUNT)]

    assert GROUP in listed_groups(secured, "alice", ALICE_PASSWORD)


def test_a_user_without_the_group_acl_is_refused_by_its_consumer_and_over_http(secured: SecuredKafka) -> None:
    errors: list[int] = []
    with closing(consumer(secured, "bob", BOB_PASSWORD)) as bob:
        bob.subscribe([TOPIC])
        deadline = time.monotonic() + TIMEOUT_S
        while not errors and time.monotonic() < deadline:
            message = bob.poll(0.2)
            if message is not None:
                assert message.error() is not None, "bob read a record without the group ACL"
                errors.append(message.error().code())
        assert bob.assignment() == []
    assert errors == [KafkaError.GROUP_AUTHORIZATION_FAILED]
    bob_headers = basic("bob", BOB_PASSWORD)
    assert secured.http("GET", f"/consumer-groups/{GROUP}", bob_headers)[0] == 403
    commit = {"member_id": "", "member_epoch": -1, "offsets": [{"topic_name": TOPIC, "partition_id": 0, "offset": 0}]}
    assert secured.http("POST", f"/consumer-groups/{GROUP}/offsets", bob_headers, commit)[0] == 403

    assert GROUP not in listed_groups(secured, "bob", BOB_PASSWORD)
    assert "audit.denied" in secured.broker_logs()
