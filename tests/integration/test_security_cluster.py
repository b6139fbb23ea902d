"""Three real brokers with ``authentication = "basic"`` and TLS on, set up the way the README says.

The first admin is created offline in the metadata store before any broker starts;
everything else goes through the brokers, with the CLI and with plain HTTP as ``curl``
would send it. Then the replication guarantees must hold as they do without security:
acks=all to three replicas over verified TLS between brokers, a consumer group (whose
requests are forwarded to the group's coordinator with the caller's principal), and a
leader SIGKILL after which nothing acknowledged is lost. Brokers, not users, are the only
callers of the replica fetch route, super users included.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp
import pytest

from broker.client.types import TopicPartition
from consumer import Consumer
from producer import Producer
from tests.integration.kafka.secured import ALICE_PASSWORD, MALLORY_PASSWORD, TOPIC, add_acl, add_alice_and_mallory
from tests.support.cluster import ADMIN, ADMIN_PASSWORD, Cluster, Clusters, ClusterSpec, cluster_fixture
from tests.support.pki import CLIENT_CN
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

RECORDS = 30
SPEC = ClusterSpec(security=True, tls=True)
BILLING_ACL = {
    "resource_type": "GROUP",
    "resource_name": "billing",
    "pattern_type": "LITERAL",
    "principal": "User:alice",
    "operation": "READ",
    "permission": "ALLOW",
}

cluster = cluster_fixture(SPEC, scope="module")


def set_up(cluster: Cluster) -> Cluster:
    """alice and mallory, alice's READ on the group ``billing``, and ``secret-plans``, which alice may not touch."""
    add_alice_and_mallory(cluster)
    status, body = cluster.v3("POST", "/acls", BILLING_ACL)
    assert status == 201, body
    cluster.cli(["topics", "create", "secret-plans", "-p", "1", "-r", "3"])
    cluster.wait_for_topic("secret-plans", 1)
    return cluster


@pytest.fixture(scope="module")
def secured(cluster: Cluster) -> Cluster:
    return set_up(cluster)


def alice(cluster: Cluster) -> dict[str, str]:
    return cluster.headers("alice", ALICE_PASSWORD)


def alice_options(cluster: Cluster) -> dict[str, Any]:
    return cluster.client_options("alice", ALICE_PASSWORD)


def test_the_cli_lists_what_was_set_up_and_never_a_credential(secured: Cluster) -> None:
    users = secured.cli(["users", "list"])
    assert "alice" in users and "mallory" in users
    assert ALICE_PASSWORD not in users
    acls = secured.cli(["acls", "list", "--principal", "User:alice"])
    assert "PREFIXED" in acls and "orders-" in acls and "billing" in acls

    add_acl(secured, "User:temp", "READ", "GROUP", "g")
    assert "User:temp" in secured.cli(["acls", "list", "--principal", "User:temp"])
    secured.cli(["acls", "remove", "--principal", "User:temp"])
    assert "User:temp" not in secured.cli(["acls", "list", "--principal", "User:temp"])
    secured.cli(["quotas", "set", "User:temp", "--producer-byte-rate", "1048576"])
    assert "1048576" in secured.cli(["quotas", "list"])
    secured.cli(["quotas", "remove", "User:temp"])
    assert "User:temp" not in secured.cli(["quotas", "list"])


def test_every_broker_refuses_what_the_acls_do_not_allow(secured: Cluster) -> None:
    mallory = secured.headers("mallory", MALLORY_PASSWORD)
    for broker_id in secured.brokers:
        assert secured.v3("GET", f"/topics/{TOPIC}", via=broker_id, headers={})[0] == 401
        assert secured.v3("GET", f"/topics/{TOPIC}", via=broker_id, headers=secured.headers("alice", "wrong"))[0] == 401
        status, body = secured.v3("POST", f"/topics/{TOPIC}/records", {"value": {"data": 1}}, broker_id, mallory)
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
        status, body = secured.v3("GET", "/topics/secret-plans", via=broker_id, headers=alice(secured))
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
        listed = secured.v3("GET", "/topics", via=broker_id, headers=alice(secured))[1]
        assert [topic["topic_name"] for topic in listed["data"]] == [TOPIC]


def test_a_user_cannot_call_the_replica_fetch_route_not_even_a_super_user(secured: Cluster) -> None:
    for headers in (alice(secured), secured.headers()):
        status, body = secured.http("POST", "/internal/fetch", {}, via=1, headers=headers)
        assert (status, body["error"]) == (403, "CLUSTER_AUTHORIZATION_FAILED")


def test_group_requests_are_checked_as_the_caller_on_whichever_broker_coordinates(secured: Cluster) -> None:
    """Two of the three brokers forward to the coordinator; each answer must be the caller's own."""
    commit = {"offsets": [{"topic_name": "secret-plans", "partition_id": 0, "offset": 0}]}
    for broker_id in secured.brokers:
        status, body = secured.v3("POST", "/consumer-groups/billing/offsets", commit, broker_id, alice(secured))
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED"), (broker_id, body)
        status, body = secured.v3("GET", "/consumer-groups/other/offsets", via=broker_id, headers=alice(secured))
        assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED"), (broker_id, body)


def test_an_acl_added_on_one_broker_reaches_the_others(secured: Cluster) -> None:
    path = "/topics/secret-plans"
    mallory = secured.headers("mallory", MALLORY_PASSWORD)
    assert secured.v3("GET", path, via=3, headers=mallory)[0] == 403
    acl = {
        "resource_type": "TOPIC",
        "resource_name": "secret-plans",
        "pattern_type": "LITERAL",
        "principal": "User:mallory",
        "operation": "DESCRIBE",
        "permission": "ALLOW",
    }
    assert secured.v3("POST", "/acls", acl, via=1)[0] == 201
    for broker_id in (2, 3):
        wait_until(lambda b=broker_id: secured.v3("GET", path, via=b, headers=mallory)[0] == 200, "ACL", 5)  # type: ignore[misc]


async def test_replication_groups_and_failover_work_with_security_on(clusters: Clusters) -> None:
    """A cluster of its own: it kills the leader."""
    secured = await asyncio.to_thread(lambda: set_up(clusters.start(SPEC)))
    first = [f"before-{index}".encode() for index in range(RECORDS)]
    async with Producer(secured.url(2), acks="all", linger_ms=0, **alice_options(secured)) as producer:
        for value in first:
            await producer.send_and_wait(TOPIC, value)
    state = secured.v3("GET", f"/topics/{TOPIC}/partitions/0", via=1, headers=alice(secured))[1]
    assert sorted(state["isr"]) == [1, 2, 3] and state["high_watermark"] >= RECORDS

    consumed = await consume_as_group(secured, secured.url(3), len(first))
    assert consumed[: len(first)] == first

    leader = state["leader_id"]
    secured.brokers[leader].kill()
    survivor = next(b for b in secured.brokers if b != leader)
    second = [f"after-{index}".encode() for index in range(RECORDS)]
    async with Producer(secured.url(survivor), acks="all", linger_ms=0, **alice_options(secured)) as producer:
        for value in second:
            await producer.send_and_wait(TOPIC, value)
    everything = await read_all(secured, secured.url(survivor), 2 * RECORDS)
    assert everything[:RECORDS] == first and everything[RECORDS:] == second, "nothing acknowledged was lost"
    elected = secured.v3("GET", f"/topics/{TOPIC}/partitions/0", via=survivor, headers=alice(secured))[1]
    assert elected["leader_id"] != leader and elected["leader_id"] in state["isr"]
    await asyncio.to_thread(assert_no_credential_logged, secured, "audit.acl_created")


async def consume_as_group(secured: Cluster, url: str, count: int) -> list[bytes]:
    values: list[bytes] = []
    options = {"group_id": "billing", "auto_offset_reset": "earliest", **alice_options(secured)}
    async with Consumer(url, **options) as consumer:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            values.extend(record.value for records in batches.values() for record in records if record.value)
        await consumer.commit()
    committed = secured.v3("GET", "/consumer-groups/billing/offsets", via=1, headers=alice(secured))[1]
    assert [row["offset"] for row in committed["data"]] == [count], json.dumps(committed)
    return values


async def read_all(secured: Cluster, url: str, count: int) -> list[bytes]:
    values: list[bytes] = []
    tp = TopicPartition(TOPIC, 0)
    async with Consumer(url, auto_offset_reset="earliest", **alice_options(secured)) as consumer:
        consumer.assign([tp])
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            values.extend(record.value for record in batches.get(tp, []) if record.value)
    return values


MTLS_SPEC = ClusterSpec(
    brokers=1,
    tls=True,
    settings={"tls.client_auth": "required", "security.authentication": "mtls", "security.super_users": ["admin"]},
)
"""One broker with ``authentication = "mtls"``: the client certificate's common name is the user."""

mtls_broker = cluster_fixture(MTLS_SPEC, scope="module")


def test_with_mtls_the_certificate_names_the_user_and_passwords_change_nothing(mtls_broker: Cluster) -> None:
    for headers in ({}, {"Authorization": aiohttp.encode_basic_auth(ADMIN, ADMIN_PASSWORD)}):
        status, body = mtls_broker.v3("GET", "/acls", headers=headers)
        assert (status, body["error"]) == (403, "CLUSTER_AUTHORIZATION_FAILED")
        assert body["message"].startswith(f"User:{CLIENT_CN} is not authorized"), body
    add_acl(mtls_broker, f"User:{CLIENT_CN}", "DESCRIBE", "CLUSTER", "kafka-cluster", offline=True)
    wait_until(lambda: mtls_broker.v3("GET", "/acls", headers={})[0] == 200, "the ACL", 5)


def assert_no_credential_logged(secured: Cluster, audited: str) -> None:
    """No password, Basic header or broker token in any broker's log; broker 1 logged ``audited``."""
    secrets = {ADMIN_PASSWORD, ALICE_PASSWORD, MALLORY_PASSWORD}
    secrets |= {secured.headers()["Authorization"], alice(secured)["Authorization"]}
    secrets |= {secured.broker_headers(b)["Authorization"].split()[-1] for b in secured.brokers}
    logs = {broker.node_id: broker.log_path.read_text(errors="replace") for broker in secured.brokers.values()}
    assert f'"{audited}"' in logs[1], "the CLI changed the ACLs through broker 1, which logged who did"
    for broker in secured.brokers.values():
        text = logs[broker.node_id]
        leaked = [secret for secret in secrets if secret in text]
        assert leaked == [], f"broker {broker.node_id}'s log holds {len(leaked)} credential(s)"


def test_no_password_or_token_reaches_a_broker_log(secured: Cluster) -> None:
    """Runs last in the module: by now every password, Basic header and broker token has crossed the brokers."""
    assert_no_credential_logged(secured, "audit.acl_created")
