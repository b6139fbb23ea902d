"""A closed connection is called a Kafka listener only when the address answers the Kafka protocol.

The positive case, against a real broker's Kafka listener, is in
``tests/integration/test_dev_cluster.py``; here: an HTTP server and a closed port are not
taken for one, and a refused connection elsewhere than this machine gets no ``make run`` hint.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from broker.cli.common import unreachable_line
from broker.cli.kafka_probe import speaks_kafka
from broker.client.http import CLOSED_BY_BROKER
from tests.unit.cli.rest_server import RestServer


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def test_an_http_server_is_not_a_kafka_listener(rest_server: RestServer) -> None:
    assert not speaks_kafka(*_host_port(rest_server.url))
    assert unreachable_line(rest_server.url, CLOSED_BY_BROKER) == (
        f"cannot reach broker at {rest_server.url}: {CLOSED_BY_BROKER}"
    )


def test_a_closed_port_is_not_a_kafka_listener(closed_port_url: str) -> None:
    assert not speaks_kafka(*_host_port(closed_port_url))


def test_a_refused_connection_to_another_machine_gets_no_make_run_hint() -> None:
    assert unreachable_line("http://broker-1.internal:9092", "connection refused") == (
        "cannot reach broker at http://broker-1.internal:9092: connection refused; no broker is listening there"
    )
