"""Bodies that stall, stop short or are too large: a 4xx in bounded time, nothing appended.

A slow sender trickles part of its announced body a byte at a time and then stalls
with the connection open; the broker must answer 408 once ``request_body_timeout_ms``
has passed (the client's socket timeout, much longer, proves it does not hang). A
sender that closes mid-body must leave nothing behind, and a body over
``max_request_bytes`` (or a batch over the topic's ``max.message.bytes``) is 413.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.record.codec import RecordInput, encode_batch
from broker.replication.fetch_wire import CONTENT_TYPE as FETCH
from tests.fuzz.conftest import MAX_REQUEST_BYTES, REQUEST_BODY_TIMEOUT_MS, scaled
from tests.fuzz.wire import ANSWER_TIMEOUT_S, BATCH, Target, get, post, trickle
from tests.support.cluster import Cluster

pytestmark = [pytest.mark.fuzz, pytest.mark.integration]

TOPIC = "fuzz-bodies"
SMALL_TOPIC = "fuzz-small-batches"
JSON = "application/json"


@pytest.fixture(scope="module")
def target(fuzz_cluster: Cluster) -> Iterator[tuple[Cluster, Target]]:
    fuzz_cluster.create_topic(TOPIC, 1, 3)
    leader_id = fuzz_cluster.partitions(TOPIC)[0].leader_id
    partition_url = f"{fuzz_cluster.base(leader_id)}/topics/{TOPIC}/partitions/0"
    batch = encode_batch([RecordInput(b"k", b"kept", [], 1_700_000_000_000)])
    assert post(f"{partition_url}/batches?acks=all", batch, BATCH).status == 200
    yield fuzz_cluster, Target(partition_url, Target(partition_url, b"").raw_from_zero())


def _batch(size: int) -> bytes:
    return encode_batch([RecordInput(None, b"x" * size, [], 1_700_000_000_000)])


@settings(max_examples=4, derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(route=st.sampled_from(["batches", "records", "fetch"]), sent_bytes=st.integers(0, 6))
def test_a_slow_sender_that_stalls_gets_408_in_bounded_time(
    target: tuple[Cluster, Target], route: str, sent_bytes: int
) -> None:
    cluster, partition = target
    end_before = partition.log_end_offset()
    url, body, content_type = {
        "batches": (f"{partition.partition_url}/batches?acks=1", _batch(64), BATCH),
        "records": (partition.partition_url.rsplit("/partitions/", 1)[0] + "/records?acks=1", b'{"value": 1}', JSON),
        "fetch": (f"{cluster.url(1)}/internal/fetch", b"\x00" * 24, FETCH),
    }[route]
    headers = cluster.broker_headers(2) if route == "fetch" else {}
    status, waited_s = trickle(
        url, body, content_type, sent_bytes, pause_s=0.02, timeout_s=ANSWER_TIMEOUT_S, headers=headers
    )
    assert status == 408
    assert waited_s < REQUEST_BODY_TIMEOUT_MS / 1000 + 2
    assert partition.log_end_offset() == end_before


@settings(
    max_examples=scaled(15),
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(cut=st.integers(0, 200))
def test_a_sender_that_closes_mid_body_leaves_nothing(target: tuple[Cluster, Target], cut: int) -> None:
    _, partition = target
    end_before = partition.log_end_offset()
    body = _batch(180)
    parts = urlsplit(f"{partition.partition_url}/batches?acks=1")
    head = (
        f"POST {parts.path}?{parts.query} HTTP/1.1\r\nHost: x\r\nContent-Type: {BATCH}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((parts.hostname, parts.port), timeout=ANSWER_TIMEOUT_S) as sock:
        sock.sendall(head + body[: min(cut, len(body) - 1)])
        sock.shutdown(socket.SHUT_WR)
        reply = sock.recv(4096)
    assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply[:200]
    assert get(f"{partition.partition_url}/offset").status == 200
    assert partition.log_end_offset() == end_before
    assert partition.raw_from_zero() == partition.stored


@pytest.mark.parametrize("route", ["batches", "records", "fetch"])
def test_a_body_over_the_request_limit_is_413(target: tuple[Cluster, Target], route: str) -> None:
    cluster, partition = target
    end_before = partition.log_end_offset()
    oversized = b"\x00" * (MAX_REQUEST_BYTES + 1)
    url, content_type = {
        "batches": (f"{partition.partition_url}/batches?acks=1", BATCH),
        "records": (partition.partition_url.rsplit("/partitions/", 1)[0] + "/records?acks=1", JSON),
        "fetch": (f"{cluster.url(1)}/internal/fetch", FETCH),
    }[route]
    answer = post(url, oversized, content_type, headers=cluster.broker_headers(2) if route == "fetch" else {})
    assert answer.status == 413 and answer.json()["error"] == "REQUEST_TOO_LARGE"
    assert partition.log_end_offset() == end_before


def test_a_batch_over_max_message_bytes_is_413(fuzz_cluster: Cluster) -> None:
    fuzz_cluster.create_topic(SMALL_TOPIC, 1, 3, configs={"max.message.bytes": "1000"})
    leader_id = fuzz_cluster.partitions(SMALL_TOPIC)[0].leader_id
    partition = Target(f"{fuzz_cluster.base(leader_id)}/topics/{SMALL_TOPIC}/partitions/0", b"")
    answer = post(f"{partition.partition_url}/batches?acks=1", _batch(2000), BATCH)
    assert answer.status == 413 and answer.json()["error"] == "MESSAGE_TOO_LARGE"
    assert partition.log_end_offset() == 0
