"""Bad bytes on a Kafka connection end at most that connection; every other one keeps working.

One real broker with a Kafka listener. Each case writes something no Kafka client
sends (garbage, a truncated frame, a 2 GiB or negative size, an unknown API key,
seeded random frames) and checks that it is answered or the connection is closed
cleanly, that a connection opened before it still answers, and that a new one does.
No handler may fail on them either: the broker log has no ``kafka.request_failed_closed``.
"""

from __future__ import annotations

import random
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode

from broker.kafka.apis import API_TABLE
from broker.kafka.codec import decode_response, encode_request
from broker.kafka.framing import encode_frame
from tests.integration.kafka.conftest import KAFKA_SETTINGS
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture
from tests.unit.kafka import requests

pytestmark = pytest.mark.integration


kafka_broker = cluster_fixture(ClusterSpec(brokers=1, kafka=True, settings=KAFKA_SETTINGS), scope="module")


@pytest.fixture
def bystander(kafka_broker: Cluster) -> Iterator[Connection]:
    """A healthy connection opened before the bad bytes; it must still answer after them."""
    connection = Connection(kafka_broker.bootstrap())
    connection.api_versions_answer()
    yield connection
    assert connection.api_versions_answer().error_code == ErrorCode.none
    assert Connection(kafka_broker.bootstrap()).api_versions_answer().error_code == ErrorCode.none
    assert kafka_broker.brokers[1].alive
    assert "kafka.request_failed_closed" not in kafka_broker.logs()
    connection.close()


def test_a_known_api_with_a_garbage_body_closes_that_connection(kafka_broker: Cluster, bystander: Connection) -> None:
    connection = Connection(kafka_broker.bootstrap())
    connection.send(encode_frame(struct.pack(">hhi", 3, 9, 5) + b"\xde\xad\xbe\xef" * 3))
    assert connection.closed_by_broker()


def test_an_http_request_on_the_kafka_port_closes_that_connection(kafka_broker: Cluster, bystander: Connection) -> None:
    connection = Connection(kafka_broker.bootstrap())
    connection.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert connection.closed_by_broker()


def test_a_truncated_frame_is_dropped_with_its_connection(kafka_broker: Cluster, bystander: Connection) -> None:
    connection = Connection(kafka_broker.bootstrap())
    connection.send(encode_frame(encode_request(1, requests.api_versions(3)))[:-5])
    connection.sock.shutdown(socket.SHUT_WR)
    assert connection.closed_by_broker()


@pytest.mark.parametrize("size", [2**31 - 1, 100 * 1024 * 1024 + 1, -1, -(2**31)])
def test_a_size_outside_the_limit_closes_at_once_without_waiting_for_a_body(
    kafka_broker: Cluster, bystander: Connection, size: int
) -> None:
    connection = Connection(kafka_broker.bootstrap())
    connection.send(struct.pack(">i", size) + b"\x00\x12\x00\x03")
    assert connection.closed_by_broker()


def test_an_unknown_api_key_is_answered_unsupported_and_the_connection_stays_usable(
    kafka_broker: Cluster, bystander: Connection
) -> None:
    connection = Connection(kafka_broker.bootstrap())
    connection.send(encode_frame(struct.pack(">hhi", 4242, 0, 9) + b"\x00\x00"))
    payload = connection.receive_frame()
    assert payload is not None
    correlation_id, response = decode_response(payload, ApiVersionsResponse)
    assert (correlation_id, response.error_code) == (9, ErrorCode.unsupported_version)
    assert connection.api_versions_answer().error_code == ErrorCode.none


@pytest.mark.parametrize("seed", [15, 1015, 2015])
def test_seeded_random_frames_are_answered_or_close_their_connection(
    kafka_broker: Cluster, bystander: Connection, seed: int
) -> None:
    rng = random.Random(seed)
    keys = [api.key for api in API_TABLE] + [rng.randrange(-(2**15), 2**15) for _ in range(5)]
    for round_number in range(60):
        connection = Connection(kafka_broker.bootstrap())
        try:
            header = struct.pack(">hhi", rng.choice(keys), rng.randrange(-1, 20), round_number)
            body = rng.randbytes(rng.randrange(0, 64))
            connection.send(encode_frame(header + body))
            payload = connection.receive_frame()
            assert payload is None or payload[:4] == struct.pack(">i", round_number), f"seed {seed}"
        finally:
            connection.close()


def test_a_broker_refuses_to_start_a_tls_kafka_listener_without_a_certificate(tmp_path: Path) -> None:
    """A listener told to speak TLS never falls back to plaintext: the broker stops at start, naming the setting."""
    spec = ClusterSpec(brokers=1, kafka=True, fast=False, settings={"kafka_listener_tls": True})
    broker = Cluster(spec, tmp_path).brokers[1]  # built, not started: it must not come up
    broker.start(wait=False)
    assert broker.process is not None
    assert broker.process.wait(30) != 0
    assert "kafka_listener_tls needs tls.cert_file" in broker.log_tail()
