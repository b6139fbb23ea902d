"""The users and ACLs every secured-cluster test starts from, set up once here for all of them.

A secured harness cluster (``ClusterSpec(security=True, ...)``) has only its super user
``admin``, created offline before the brokers start. ``add_alice_and_mallory`` then goes
through the brokers with the CLI, as the README does: ``alice`` may READ and WRITE the
topics starting ``orders-``; ``mallory`` has a password and no ACL; ``TOPIC`` exists
with three replicas. It returns once every broker knows both users and alice's ACLs
(each broker follows the store on its own). A module that needs more users or ACLs
adds them with ``add_user`` and ``add_acl`` and waits on ``statuses_everywhere``.
"""

from __future__ import annotations

from pathlib import Path

from tests.integration.kafka.conftest import KAFKA_SETTINGS
from tests.support.cluster import Cluster, ClusterSpec

ALICE_PASSWORD = "alice-pw-2"
MALLORY_PASSWORD = "mallory-pw-3"
TOPIC = "orders-eu"


def secured_kafka_spec(kafka_tls: bool) -> ClusterSpec:
    """Three brokers, basic authentication, HTTPS, and a Kafka listener speaking TLS (SASL_SSL) only when asked."""
    settings = {**KAFKA_SETTINGS, "kafka_listener_tls": kafka_tls}
    return ClusterSpec(security=True, tls=True, kafka=True, settings=settings)


def ca_file(cluster: Cluster) -> Path:
    """The CA a Kafka client verifies the secured cluster's listeners with."""
    assert cluster.pki is not None, "a secured spec has TLS"
    return cluster.pki.ca_file


def add_user(cluster: Cluster, name: str, password: str) -> None:
    """``highwater users add`` as the admin, through broker 1."""
    cluster.cli(["users", "add", name, "--password-stdin"], password)


def add_acl(
    cluster: Cluster,
    principal: str,
    operation: str,
    resource_type: str,
    resource_name: str,
    prefixed: bool = False,
    offline: bool = False,
) -> None:
    """``highwater acls add`` allowing ``principal`` ``operation`` on one resource (every one starting
    ``resource_name`` when ``prefixed``). ``offline`` writes the metadata store directly, for a cluster
    whose brokers no password reaches (mTLS) or that is not started yet."""
    arguments = [
        "acls", "add", "--principal", principal, "--operation", operation,
        "--resource-type", resource_type, "--resource-name", resource_name,
    ]  # fmt: skip
    if prefixed:
        arguments += ["--pattern-type", "PREFIXED"]
    if offline:
        arguments += ["--metadata", cluster.metadata_store]
    cluster.cli(arguments, env={} if offline else None)


def statuses_everywhere(cluster: Cluster, path: str, user: str, password: str) -> set[int]:
    """The statuses the brokers answer ``user`` for GET ``path`` under the cluster: ``{200}`` once all allow it."""
    headers = cluster.headers(user, password)
    return {cluster.v3("GET", path, via=broker, headers=headers)[0] for broker in cluster.brokers}


def add_alice_and_mallory(cluster: Cluster) -> None:
    """Add alice (READ and WRITE on ``orders-*``) and mallory (no ACL), create ``TOPIC``, and wait for every broker."""
    add_user(cluster, "alice", ALICE_PASSWORD)
    add_user(cluster, "mallory", MALLORY_PASSWORD)
    for operation in ("WRITE", "READ"):
        add_acl(cluster, "User:alice", operation, "TOPIC", "orders-", prefixed=True)
    cluster.create_topic(TOPIC)
    path = f"/topics/{TOPIC}"
    cluster.wait_until(
        lambda: (
            statuses_everywhere(cluster, path, "alice", ALICE_PASSWORD) == {200}
            and 401 not in statuses_everywhere(cluster, path, "mallory", MALLORY_PASSWORD)
        ),
        "alice, mallory and alice's ACLs on every broker",
    )
