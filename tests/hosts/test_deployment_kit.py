"""The deployment kit runs as written: three hosts, each broker started by the systemd unit's
command with ``config/deploy/cluster.toml`` and a host environment file shaped like
``broker.env.example``, against a 3-member etcd cluster.

That file asks for TLS for clients and between brokers and SCRAM users for clients, so
the cluster working at all shows each: the first user is created straight in etcd before
any broker starts (as ``docs/operations.md`` says), every ISR fills over HTTPS between
the brokers, acks=all writes go in over HTTPS as that user, and a Kafka client reads
them back from every host's Kafka listener over SASL_SSL with SCRAM-SHA-512.

What the example names by production paths (``/var/lib/highwater``, ``/etc/highwater/tls``,
the etcd members' host names) is given here the way an operator overrides any setting:
in the host's environment file.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from broker.client.admin import AdminClient
from broker.client.http import ClusterClient
from tests.hosts.checked_load import wait_for_partitions, wait_in_sync
from tests.hosts.clients import produce_all
from tests.hosts.deployment import ClientAccess, HostsDeployment
from tests.hosts.kit import KIT, SystemdUnit, environment_file, local_argv
from tests.hosts.network import Host, HostNetwork
from tests.support.launcher import REPO_ROOT
from tests.support.pki import Pki, make_pki

ADMIN_PASSWORD = "kit-admin-password"
KAFKA_PORT = 19092
TOPIC = "kit"
PARTITIONS = 3
WAIT_S = 40.0


@pytest.fixture
def kit_deployment(network: HostNetwork, tmp_path: Path) -> Iterator[tuple[HostsDeployment, Pki]]:
    pki = make_pki(tmp_path / "tls", broker_names=tuple(host.address for host in network.hosts))
    deployment = HostsDeployment(network, tmp_path, access=ClientAccess(pki.ca_file, "admin", ADMIN_PASSWORD))
    try:
        yield deployment, pki
    finally:
        for host in network.hosts:
            host.kill_all()


def _host_environment(deployment: HostsDeployment, host: Host, pki: Pki) -> str:
    """``broker.env`` for ``host``: the example's settings with this host's values, then the test's paths."""
    address = host.address
    per_host = {
        "HIGHWATER_NODE_ID": str(host.index),
        "HIGHWATER_HOST": "0.0.0.0",
        "HIGHWATER_ADVERTISED_URL": f"https://{address}:9092",
        "HIGHWATER_INTER_BROKER_URL": f"https://{address}:9092",
        "HIGHWATER_RACK": f"host-{host.index}",
        "HIGHWATER_KAFKA_LISTENER": f"0.0.0.0:{KAFKA_PORT}",
        "HIGHWATER_KAFKA_ADVERTISED_LISTENER": f"{address}:{KAFKA_PORT}",
    }
    example = environment_file((KIT / "broker.env.example").read_text())
    assert set(per_host) == set(example), "the example host environment and the test's name different settings"
    overrides = {
        "HIGHWATER_DATA_DIR": str(deployment.data_dir(host.index)),
        "HIGHWATER_METADATA_STORE": deployment.metadata_store,
        "HIGHWATER_TLS__CERT_FILE": str(pki.broker_cert),
        "HIGHWATER_TLS__KEY_FILE": str(pki.broker_key),
        "HIGHWATER_TLS__CA_FILE": str(pki.ca_file),
    }
    return "".join(f"{key}={value}\n" for key, value in {**per_host, **overrides}.items())


def _add_admin(deployment: HostsDeployment) -> None:
    argv = [sys.executable, "-m", "broker", "users", "add", "admin", "--password-stdin"]
    done = subprocess.run(
        [*argv, "--metadata", deployment.metadata_store],
        check=False,
        input=ADMIN_PASSWORD,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
    )
    assert done.returncode == 0, done.stderr


def _read_over_kafka(host: Host, pki: Pki, count: int) -> list[bytes]:
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": f"{host.address}:{KAFKA_PORT}",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": ADMIN_PASSWORD,
            "ssl.ca.location": str(pki.ca_file),
            "group.id": "kit-reader",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([KafkaTopicPartition(TOPIC, partition, 0) for partition in range(PARTITIONS)])
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                value = message.value()
                assert value is not None
                values.append(value)
        return values
    finally:
        consumer.close()


async def test_the_kit_runs_three_hosts_with_tls_between_brokers_and_scram_users(
    kit_deployment: tuple[HostsDeployment, Pki],
) -> None:
    deployment, pki = kit_deployment
    deployment.start_etcd()
    _add_admin(deployment)
    argv = local_argv(SystemdUnit.read().exec_start)
    for host in deployment.hosts:
        env_file = deployment.root / f"host-{host.index}" / "broker.env"
        env_file.write_text(_host_environment(deployment, host, pki))
        deployment.spawn_broker(host.index, argv, environment_file(env_file.read_text()))
    nodes = {host.index for host in deployment.hosts}
    await asyncio.to_thread(deployment.wait_for_brokers, nodes, nodes)

    client = ClusterClient(deployment.urls, username="admin", password=ADMIN_PASSWORD, ssl_ca_file=pki.ca_file)
    try:
        await AdminClient(client).create_topic(TOPIC, PARTITIONS, None, {})
    finally:
        await client.close()
    await wait_in_sync(deployment, 1, TOPIC)
    values = [f"kit-{i}".encode() for i in range(60)]
    await produce_all(
        deployment.urls,
        TOPIC,
        values,
        PARTITIONS,
        username="admin",
        password=ADMIN_PASSWORD,
        ssl_ca_file=str(pki.ca_file),
    )

    for host in deployment.hosts:
        read = await asyncio.to_thread(_read_over_kafka, host, pki, len(values))
        assert sorted(read) == sorted(values), f"host {host.index}'s Kafka listener served {len(read)} of {len(values)}"
    states = await asyncio.to_thread(wait_for_partitions, deployment, 2, TOPIC, lambda s: s.settled, "settled", WAIT_S)
    assert [state.high_watermark for state in states] == [len(values) // PARTITIONS] * PARTITIONS
