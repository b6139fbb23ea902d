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

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from typer.testing import CliRunner

from broker.cli.app import app
from broker.client.types import TopicPartition
from consumer import Consumer
from producer import Producer
from tests.support.brokers import BrokerCluster, BrokerProcess, http_json
from tests.support.pki import CLIENT_CN, Pki, make_pki
from tests.support.replication import FAST_ENV, wait_until

pytestmark = pytest.mark.integration

ADMIN_PASSWORD = "admin-pw-1"
ALICE_PASSWORD = "alice-pw-2"
TOPIC = "orders-eu"
RECORDS = 30


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": aiohttp.encode_basic_auth(username, password)}


ADMIN = basic("admin", ADMIN_PASSWORD)
ALICE = basic("alice", ALICE_PASSWORD)


def cli(arguments: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    result = CliRunner().invoke(app, arguments, env=env, input=stdin)
    assert result.exit_code == 0, result.output
    return result.output


class Secured:
    def __init__(self, cluster: BrokerCluster, pki: Pki, admin_env: dict[str, str]) -> None:
        self.cluster = cluster
        self.pki = pki
        self.admin_env = admin_env
        self.context = pki.client_context(with_certificate=False)
        self.cluster_id = cluster.cluster_id()

    def url(self, broker_id: int) -> str:
        return self.cluster.brokers[broker_id].url

    def call(
        self, method: str, broker_id: int, path: str, headers: dict[str, str], body: Any = None
    ) -> tuple[int, dict]:
        url = f"{self.url(broker_id)}/v3/clusters/{self.cluster_id}{path}"
        return http_json(method, url, body, context=self.context, headers=headers)

    def alice_options(self) -> dict[str, Any]:
        return {"username": "alice", "password": ALICE_PASSWORD, "ssl_ca_file": self.pki.ca_file}


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root: Path = tmp_path_factory.mktemp("secured")
    pki = make_pki(root / "pki")
    store = f"sqlite://{(root / 'metadata.db').resolve()}"
    cli(["users", "add", "admin", "--password-stdin", "--metadata", store], {}, ADMIN_PASSWORD + "\n")
    cluster = BrokerCluster(root, 3, metadata_store=store)
    for broker in cluster.brokers.values():
        broker.env = {
            **FAST_ENV,
            **pki.broker_env(),
            "HIGHWATER_SECURITY__AUTHENTICATION": "basic",
            "HIGHWATER_SECURITY__SUPER_USERS": '["admin"]',
        }
        broker.ssl_context = pki.client_context(with_certificate=False)
        broker.auth_headers = ADMIN
    cluster.start()
    admin_env = {
        "HIGHWATER_SERVER": cluster.brokers[1].url,
        "HIGHWATER_SSL_CA_FILE": str(pki.ca_file),
        "HIGHWATER_USERNAME": "admin",
        "HIGHWATER_PASSWORD": ADMIN_PASSWORD,
    }
    try:
        secured = Secured(cluster, pki, admin_env)
        cli(["users", "add", "alice", "--password-stdin"], admin_env, ALICE_PASSWORD + "\n")
        cli(["users", "add", "mallory", "--password-stdin"], admin_env, "mallory-pw\n")
        for operation in ("WRITE", "READ"):
            cli(
                [
                    "acls", "add", "--principal", "User:alice", "--operation", operation,
                    "--resource-type", "TOPIC", "--resource-name", "orders-", "--pattern-type", "PREFIXED",
                ],
                admin_env,
            )  # fmt: skip
        status, body = secured.call(
            "POST",
            1,
            "/acls",
            ADMIN,
            {
                "resource_type": "GROUP",
                "resource_name": "billing",
                "pattern_type": "LITERAL",
                "principal": "User:alice",
                "operation": "READ",
                "permission": "ALLOW",
            },
        )
        assert status == 201, body
        cli(["topics", "create", TOPIC, "-p", "1", "-r", "3"], admin_env)
        cli(["topics", "create", "secret-plans", "-p", "1", "-r", "3"], admin_env)
        yield secured
    finally:
        cluster.shutdown()


def test_the_cli_lists_what_was_set_up_and_never_a_credential(secured: Secured) -> None:
    users = cli(["users", "list"], secured.admin_env)
    assert "alice" in users and "mallory" in users
    assert ALICE_PASSWORD not in users
    acls = cli(["acls", "list", "--principal", "User:alice"], secured.admin_env)
    assert "PREFIXED" in acls and "orders-" in acls and "billing" in acls

    env = secured.admin_env
    temp_acl = ["--principal", "User:temp", "--operation", "READ", "--resource-type", "GROUP", "--resource-name", "g"]
    cli(["acls", "add", *temp_acl], env)
    assert "User:temp" in cli(["acls", "list", "--principal", "User:temp"], env)
    cli(["acls", "remove", "--principal", "User:temp"], env)
    assert "User:temp" not in cli(["acls", "list", "--principal", "User:temp"], env)
    cli(["quotas", "set", "User:temp", "--producer-byte-rate", "1048576"], env)
    assert "1048576" in cli(["quotas", "list"], env)
    cli(["quotas", "remove", "User:temp"], env)
    assert "User:temp" not in cli(["quotas", "list"], env)


def test_every_broker_refuses_what_the_acls_do_not_allow(secured: Secured) -> None:
    mallory = basic("mallory", "mallory-pw")
    for broker_id in secured.cluster.brokers:
        assert secured.call("GET", broker_id, f"/topics/{TOPIC}", {})[0] == 401
        assert secured.call("GET", broker_id, f"/topics/{TOPIC}", basic("alice", "wrong"))[0] == 401
        status, body = secured.call("POST", broker_id, f"/topics/{TOPIC}/records", mallory, {"value": {"data": 1}})
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
        status, body = secured.call("GET", broker_id, "/topics/secret-plans", ALICE)
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED")
        listed = secured.call("GET", broker_id, "/topics", ALICE)[1]
        assert [topic["topic_name"] for topic in listed["data"]] == [TOPIC]


def test_a_user_cannot_call_the_replica_fetch_route_not_even_a_super_user(secured: Secured) -> None:
    for headers in (ALICE, ADMIN):
        url = f"{secured.url(1)}/internal/fetch"
        status, body = http_json("POST", url, {}, context=secured.context, headers=headers)
        assert (status, body["error"]) == (403, "CLUSTER_AUTHORIZATION_FAILED")


def test_group_requests_are_checked_as_the_caller_on_whichever_broker_coordinates(secured: Secured) -> None:
    """Two of the three brokers forward to the coordinator; each answer must be the caller's own."""
    commit = {"offsets": [{"topic_name": "secret-plans", "partition_id": 0, "offset": 0}]}
    for broker_id in secured.cluster.brokers:
        status, body = secured.call("POST", broker_id, "/consumer-groups/billing/offsets", ALICE, commit)
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED"), (broker_id, body)
        status, body = secured.call("GET", broker_id, "/consumer-groups/other/offsets", ALICE)
        assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED"), (broker_id, body)


def test_an_acl_added_on_one_broker_reaches_the_others(secured: Secured) -> None:
    path = "/topics/secret-plans"
    assert secured.call("GET", 3, path, basic("mallory", "mallory-pw"))[0] == 403
    acl = {
        "resource_type": "TOPIC",
        "resource_name": "secret-plans",
        "pattern_type": "LITERAL",
        "principal": "User:mallory",
        "operation": "DESCRIBE",
        "permission": "ALLOW",
    }
    assert secured.call("POST", 1, "/acls", ADMIN, acl)[0] == 201
    for broker_id in (2, 3):
        wait_until(lambda b=broker_id: secured.call("GET", b, path, basic("mallory", "mallory-pw"))[0] == 200, 5, "ACL")


async def test_replication_groups_and_failover_work_with_security_on(secured: Secured) -> None:
    first = [f"before-{index}".encode() for index in range(RECORDS)]
    async with Producer(secured.url(2), acks="all", linger_ms=0, **secured.alice_options()) as producer:
        for value in first:
            await producer.send_and_wait(TOPIC, value)
    state = secured.call("GET", 1, f"/topics/{TOPIC}/partitions/0", ALICE)[1]
    assert sorted(state["isr"]) == [1, 2, 3] and state["high_watermark"] >= RECORDS

    consumed = await consume_as_group(secured, secured.url(3), len(first))
    assert consumed[: len(first)] == first

    leader = state["leader_id"]
    secured.cluster.brokers[leader].kill()
    survivor = next(b for b in secured.cluster.brokers if b != leader)
    second = [f"after-{index}".encode() for index in range(RECORDS)]
    async with Producer(secured.url(survivor), acks="all", linger_ms=0, **secured.alice_options()) as producer:
        for value in second:
            await producer.send_and_wait(TOPIC, value)
    everything = await read_all(secured, secured.url(survivor), 2 * RECORDS)
    assert everything[:RECORDS] == first and everything[RECORDS:] == second, "nothing acknowledged was lost"
    elected = secured.call("GET", survivor, f"/topics/{TOPIC}/partitions/0", ALICE)[1]
    assert elected["leader_id"] != leader and elected["leader_id"] in state["isr"]


async def consume_as_group(secured: Secured, url: str, count: int) -> list[bytes]:
    values: list[bytes] = []
    options = {"group_id": "billing", "auto_offset_reset": "earliest", **secured.alice_options()}
    async with Consumer(url, **options) as consumer:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            values.extend(record.value for records in batches.values() for record in records if record.value)
        await consumer.commit()
    committed = secured.call("GET", 1, "/consumer-groups/billing/offsets", ALICE)[1]
    assert [row["offset"] for row in committed["data"]] == [count], json.dumps(committed)
    return values


async def read_all(secured: Secured, url: str, count: int) -> list[bytes]:
    values: list[bytes] = []
    tp = TopicPartition(TOPIC, 0)
    async with Consumer(url, auto_offset_reset="earliest", **secured.alice_options()) as consumer:
        consumer.assign([tp])
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            values.extend(record.value for record in batches.get(tp, []) if record.value)
    return values


@pytest.fixture(scope="module")
def mtls_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    """One broker with ``authentication = "mtls"``: the client certificate's common name is the user."""
    root: Path = tmp_path_factory.mktemp("mtls")
    pki = make_pki(root / "pki")
    store = f"sqlite://{(root / 'metadata.db').resolve()}"
    broker = BrokerProcess(1, root / "broker-1", store)
    broker.env = {
        **FAST_ENV,
        **pki.broker_env(client_auth="required"),
        "HIGHWATER_SECURITY__AUTHENTICATION": "mtls",
        "HIGHWATER_SECURITY__SUPER_USERS": '["admin"]',
    }
    broker.ssl_context = pki.client_context()
    broker.start()
    try:
        yield broker, store
    finally:
        broker.stop()


def test_with_mtls_the_certificate_names_the_user_and_passwords_change_nothing(
    mtls_broker: tuple[BrokerProcess, str],
) -> None:
    broker, store = mtls_broker
    cluster_id = http_json("GET", f"{broker.url}/v3/clusters", context=broker.ssl_context)[1]["data"][0]["cluster_id"]
    acls = f"{broker.url}/v3/clusters/{cluster_id}/acls"
    for headers in ({}, ADMIN):
        status, body = http_json("GET", acls, context=broker.ssl_context, headers=headers)
        assert (status, body["error"]) == (403, "CLUSTER_AUTHORIZATION_FAILED")
        assert body["message"].startswith(f"User:{CLIENT_CN} is not authorized"), body
    cli(
        [
            "acls", "add", "--metadata", store, "--principal", f"User:{CLIENT_CN}", "--operation", "DESCRIBE",
            "--resource-type", "CLUSTER", "--resource-name", "kafka-cluster",
        ],
        {},
    )  # fmt: skip
    wait_until(lambda: http_json("GET", acls, context=broker.ssl_context)[0] == 200, 5, "the ACL")


def test_no_password_or_token_reaches_a_broker_log(secured: Secured) -> None:
    """Runs last in the module: by now every password, Basic header and broker token has crossed the brokers."""
    secrets = {ADMIN_PASSWORD, ALICE_PASSWORD, "mallory-pw", ADMIN["Authorization"], ALICE["Authorization"]}
    secrets |= {secured.cluster.broker_headers(b)["Authorization"].split()[-1] for b in secured.cluster.brokers}
    logs = {broker.node_id: broker.log_path.read_text(errors="replace") for broker in secured.cluster.brokers.values()}
    assert '"audit.acl_created"' in logs[1], "the CLI changed the ACLs through broker 1, which logged who did"
    for broker in secured.cluster.brokers.values():
        text = logs[broker.node_id]
        leaked = [secret for secret in secrets if secret in text]
        assert leaked == [], f"broker {broker.node_id}'s log holds {len(leaked)} credential(s)"
