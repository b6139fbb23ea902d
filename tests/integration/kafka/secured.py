"""A real 3-broker cluster with ``authentication = "basic"`` and a Kafka listener per broker, for SASL tests.

Set up as ``tests/integration/test_security_cluster.py`` sets up the HTTP side: the
first admin is created offline in the metadata store, then users, ACLs and topics go
through the brokers with the CLI. ``alice`` may READ and WRITE the topics starting
``orders-``; ``mallory`` has a password and no ACL. The HTTP listener speaks TLS with
the same PKI; the Kafka listener speaks TLS (SASL_SSL) only when asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from typer.testing import CliRunner

from broker.cli.app import app
from tests.integration.kafka.conftest import KAFKA_ENV
from tests.support.brokers import BrokerCluster, free_port, http_json
from tests.support.pki import Pki, make_pki
from tests.support.replication import wait_until

ADMIN_PASSWORD = "admin-pw-1"
ALICE_PASSWORD = "alice-pw-2"
MALLORY_PASSWORD = "mallory-pw-3"
TOPIC = "orders-eu"


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": aiohttp.encode_basic_auth(username, password)}


def cli(arguments: list[str], env: dict[str, str], stdin: str | None = None) -> str:
    result = CliRunner().invoke(app, arguments, env=env, input=stdin)
    assert result.exit_code == 0, result.output
    return result.output


@dataclass
class SecuredKafka:
    cluster: BrokerCluster
    pki: Pki
    kafka_addresses: dict[int, str]
    cluster_id: str
    admin_env: dict[str, str]
    """The CLI's environment as the super user ``admin``."""

    def bootstrap(self) -> str:
        return ",".join(self.kafka_addresses[b] for b in sorted(self.kafka_addresses))

    def http(self, method: str, path: str, headers: dict[str, str], body: dict | None = None) -> tuple[int, dict]:
        url = f"{self.cluster.any_url()}/v3/clusters/{self.cluster_id}{path}"
        return http_json(method, url, body, context=self.pki.client_context(with_certificate=False), headers=headers)

    def broker_logs(self) -> str:
        return "".join(broker.log_path.read_text(errors="replace") for broker in self.cluster.brokers.values())


@contextmanager
def secured_kafka(root: Path, kafka_tls: bool) -> Iterator[SecuredKafka]:
    pki = make_pki(root / "pki")
    store = f"sqlite://{(root / 'metadata.db').resolve()}"
    cli(["users", "add", "admin", "--password-stdin", "--metadata", store], {}, ADMIN_PASSWORD + "\n")
    cluster = BrokerCluster(root, 3, metadata_store=store)
    addresses = {}
    for broker_id, broker in cluster.brokers.items():
        addresses[broker_id] = f"127.0.0.1:{free_port()}"
        broker.env = {
            **KAFKA_ENV,
            **pki.broker_env(),
            "HIGHWATER_SECURITY__AUTHENTICATION": "basic",
            "HIGHWATER_SECURITY__SUPER_USERS": '["admin"]',
            "HIGHWATER_KAFKA_LISTENER": addresses[broker_id],
            "HIGHWATER_KAFKA_LISTENER_TLS": "true" if kafka_tls else "false",
        }
        broker.ssl_context = pki.client_context(with_certificate=False)
        broker.auth_headers = basic("admin", ADMIN_PASSWORD)
    cluster.start()
    try:
        admin_env = {
            "HIGHWATER_SERVER": cluster.brokers[1].url,
            "HIGHWATER_SSL_CA_FILE": str(pki.ca_file),
            "HIGHWATER_USERNAME": "admin",
            "HIGHWATER_PASSWORD": ADMIN_PASSWORD,
        }
        cli(["users", "add", "alice", "--password-stdin"], admin_env, ALICE_PASSWORD + "\n")
        cli(["users", "add", "mallory", "--password-stdin"], admin_env, MALLORY_PASSWORD + "\n")
        for operation in ("WRITE", "READ"):
            cli(
                [
                    "acls", "add", "--principal", "User:alice", "--operation", operation,
                    "--resource-type", "TOPIC", "--resource-name", "orders-", "--pattern-type", "PREFIXED",
                ],
                admin_env,
            )  # fmt: skip
        cli(["topics", "create", TOPIC, "-p", "1", "-r", "3"], admin_env)
        secured = SecuredKafka(cluster, pki, addresses, cluster.cluster_id(), admin_env)
        admin = basic("admin", ADMIN_PASSWORD)

        def in_sync() -> bool:
            status, reply = secured.http("GET", f"/topics/{TOPIC}/partitions", admin)
            return status == 200 and all(len(p["isr"]) == 3 for p in reply["data"])

        def everywhere() -> bool:
            """Every broker knows both users and alice's ACL (each follows the store on its own)."""
            context = pki.client_context(with_certificate=False)
            path = f"/v3/clusters/{secured.cluster_id}/topics/{TOPIC}"
            alice = [
                http_json("GET", b.url + path, context=context, headers=basic("alice", ALICE_PASSWORD))[0]
                for b in cluster.brokers.values()
            ]
            mallory = [
                http_json("GET", b.url + path, context=context, headers=basic("mallory", MALLORY_PASSWORD))[0]
                for b in cluster.brokers.values()
            ]
            return alice == [200] * 3 and 401 not in mallory

        wait_until(in_sync, 20, f"{TOPIC} fully in sync")
        wait_until(everywhere, 20, "users and ACLs on every broker")
        yield secured
    finally:
        cluster.shutdown()
