"""TLS end to end: real ``highwater serve`` processes with certificates from a throwaway CA.

One module-scoped cluster of three brokers that require client certificates
(``client_auth = "required"``) carries most tests: the brokers fetch from each other
over verified mTLS (a topic with ``min.insync.replicas = 3`` acknowledges ``acks=all``
only once both followers fetched), and the libraries, the CLI and the refusals are
checked against it. Every refusal must come quickly, as a ``TlsHandshakeFailed`` or a
``BrokerUnreachable`` naming why: never a hang until a timeout.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from broker.client.admin import AdminClient
from broker.client.errors import BrokerUnreachable, TlsHandshakeFailed
from broker.client.http import ClusterClient
from broker.client.security import ClientSecurity
from broker.client.types import TopicPartition
from broker.command import app
from broker.errors import HighwaterError
from config import variables
from consumer import Consumer
from producer import Producer
from spark_connector.http import BrokerUnreachable as SparkBrokerUnreachable
from spark_connector.http import TlsHandshakeFailed as SparkTlsHandshakeFailed
from spark_connector.metadata import ClusterMetadata
from tests.support.brokers import BrokerProcess
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture, setting_variables
from tests.support.pki import Pki, make_pki
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

REFUSAL_WITHIN_S = 5.0
"""A refused handshake is answered at once; this only allows for a loaded machine."""
RECORDS = 20


SPEC = ClusterSpec(tls=True, settings={"tls.client_auth": "required"})

cluster = cluster_fixture(SPEC, scope="module")


@pytest.fixture(scope="module")
def pki(cluster: Cluster) -> Pki:
    """The cluster's throwaway CA, its broker and its client certificates."""
    assert cluster.pki is not None
    return cluster.pki


def client_options(pki: Pki) -> dict[str, Any]:
    return {"ssl_ca_file": pki.ca_file, "ssl_cert_file": pki.client_cert, "ssl_key_file": pki.client_key}


async def test_cluster_advertises_https_urls(cluster: Cluster, pki: Pki) -> None:
    client = ClusterClient([cluster.brokers[1].url], **client_options(pki))
    try:
        brokers = await AdminClient(client).list_brokers()
    finally:
        await client.close()
    urls = sorted(broker["url"] for broker in brokers)
    assert urls == sorted(broker.url for broker in cluster.brokers.values())
    assert all(url.startswith("https://127.0.0.1:") for url in urls)


async def test_libraries_produce_acks_all_to_three_replicas_and_read_back_elsewhere(cluster: Cluster, pki: Pki) -> None:
    first, second, third = (broker.url for broker in cluster.brokers.values())
    creator, describer = ClusterClient([first], **client_options(pki)), ClusterClient([third], **client_options(pki))
    try:
        await AdminClient(creator).create_topic("tls-orders", 1, 3, {"min.insync.replicas": "3"})
        async with Producer(second, acks="all", linger_ms=0, **client_options(pki)) as producer:
            for index in range(RECORDS):
                await producer.send_and_wait("tls-orders", f"order-{index}".encode())
        partition = (await AdminClient(describer).list_partitions("tls-orders"))[0]
    finally:
        await creator.close()
        await describer.close()
    assert sorted(partition["isr"]) == [1, 2, 3]
    assert partition["high_watermark"] == RECORDS

    consumer = Consumer(third, auto_offset_reset="earliest", **client_options(pki))
    tp = TopicPartition("tls-orders", 0)
    consumer.assign([tp])
    values: list[bytes | None] = []
    deadline = time.monotonic() + 20
    try:
        while len(values) < RECORDS and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            values.extend(record.value for record in batches.get(tp, []))
    finally:
        await consumer.close()
    assert values == [f"order-{index}".encode() for index in range(RECORDS)]


def test_cli_reaches_the_cluster_with_the_environments_certificates(cluster: Cluster, pki: Pki) -> None:
    env = {
        variables.SSL_CA_FILE: str(pki.ca_file),
        variables.SSL_CERT_FILE: str(pki.client_cert),
        variables.SSL_KEY_FILE: str(pki.client_key),
    }
    url = cluster.brokers[2].url
    created = CliRunner().invoke(app, ["topics", "create", "tls-cli", "-p", "1", "-r", "3", "-s", url], env=env)
    assert created.exit_code == 0, created.output
    listed = CliRunner().invoke(app, ["topics", "list", "-s", url], env=env)
    assert listed.exit_code == 0, listed.output
    assert "tls-cli" in listed.output


def test_cli_without_a_client_certificate_is_refused_in_one_line(cluster: Cluster, pki: Pki) -> None:
    url = cluster.brokers[1].url
    result = CliRunner().invoke(app, ["topics", "list", "-s", url, "--ssl-ca-file", str(pki.ca_file)])
    assert result.exit_code == 1
    assert len(result.output.splitlines()) == 1
    assert result.output.startswith(f"highwater: cannot reach broker at {url}: ")
    assert result.output.endswith("(a broker that requires client certificates does that to a client without one)\n")


def test_spark_connectors_blocking_client_uses_the_same_options(cluster: Cluster, pki: Pki) -> None:
    security = ClientSecurity(ssl_ca_file=pki.ca_file, ssl_cert_file=pki.client_cert, ssl_key_file=pki.client_key)
    with ClusterMetadata([cluster.brokers[3].url], security=security) as metadata:
        assert metadata.cluster_id == cluster.cluster_id
        assert sorted(metadata.broker_urls().values()) == sorted(b.url for b in cluster.brokers.values())
    without_certificate = ClientSecurity(ssl_ca_file=pki.ca_file)
    refused = ClusterMetadata([cluster.brokers[3].url], retry_for_s=0, security=without_certificate)
    with refused, pytest.raises(SparkBrokerUnreachable, match="closed connection"):
        refused.topic_names()


def test_spark_connectors_client_does_not_retry_an_untrusted_broker(cluster: Cluster, tmp_path: Path) -> None:
    other = make_pki(tmp_path / "other")
    security = ClientSecurity(ssl_ca_file=other.ca_file, ssl_cert_file=other.client_cert, ssl_key_file=other.client_key)
    untrusting = ClusterMetadata([cluster.brokers[3].url], security=security)
    started = time.monotonic()
    with untrusting, pytest.raises(SparkTlsHandshakeFailed, match="CERTIFICATE_VERIFY_FAILED"):
        untrusting.topic_names()
    assert time.monotonic() - started < REFUSAL_WITHIN_S, "a failed handshake is not retried"


@pytest.mark.parametrize(
    ("options", "error", "reason"),
    [
        pytest.param("other-ca", TlsHandshakeFailed, "self-signed certificate in certificate chain", id="other-ca"),
        pytest.param("system-trust", TlsHandshakeFailed, "self-signed certificate in certificate chain", id="system"),
        pytest.param("no-client-certificate", BrokerUnreachable, "requires client certificates", id="no-client-cert"),
        pytest.param("plain-http", BrokerUnreachable, "the broker closed the connection", id="plain-http"),
    ],
)
async def test_refused_connections_fail_at_once_with_the_reason(
    cluster: Cluster, pki: Pki, tmp_path: Path, options: str, error: type[HighwaterError], reason: str
) -> None:
    url = cluster.brokers[1].url
    kwargs: dict[str, Any] = {}
    if options == "other-ca":
        kwargs = client_options(make_pki(tmp_path / "other"))
    elif options == "no-client-certificate":
        kwargs = {"ssl_ca_file": pki.ca_file}
    elif options == "plain-http":
        url, kwargs = url.replace("https://", "http://"), client_options(pki)
    client = ClusterClient([url], request_timeout_ms=30_000, **kwargs)
    started = time.monotonic()
    try:
        with pytest.raises(error) as caught:
            await client.cluster_id()
    finally:
        await client.close()
    assert time.monotonic() - started < REFUSAL_WITHIN_S
    assert reason in caught.value.details["reason"]


async def test_an_expired_broker_certificate_is_refused(tmp_path: Path) -> None:
    expired = make_pki(
        tmp_path / "expired", broker_not_after=datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)
    )
    broker = Cluster(ClusterSpec(brokers=1, tls=True), tmp_path).brokers[1]  # built, then given the expired certificate
    broker.env.update(setting_variables(expired.tls_settings()))
    broker.start(wait=False)
    try:
        client = ClusterClient([f"https://127.0.0.1:{broker.port}"], ssl_ca_file=expired.ca_file)
        try:
            with pytest.raises(TlsHandshakeFailed) as caught:
                await _first_answer(client, broker)
        finally:
            await client.close()
    finally:
        broker.kill()
    assert caught.value.details["reason"] == "TLS handshake failed: certificate has expired"


async def _first_answer(client: ClusterClient, broker: BrokerProcess) -> str:
    """Wait until the broker listens, then ask: its first real answer."""

    def listening() -> bool:
        assert broker.alive, f"broker 1 exited:\n{broker.log_tail()}"
        with socket.create_connection(("127.0.0.1", broker.port), timeout=1):
            return True

    await asyncio.to_thread(wait_until, listening, "broker 1 to listen")
    return await client.cluster_id()
