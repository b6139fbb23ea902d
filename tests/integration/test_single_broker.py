"""One real ``highwater serve`` process: produce, restart (clean and kill -9), read everything back."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from tests.support.cluster import Cluster, Clusters, ClusterSpec, cluster_fixture
from tests.support.replication import read_all

pytestmark = pytest.mark.integration

SPEC = ClusterSpec(brokers=1)
cluster = cluster_fixture(SPEC, scope="module")
"""Shared by the tests that leave the broker running, each on topics named by its ``prefix``."""


def _produce_batch(cluster: Cluster, topic: str, values: list[str], partition: int, acks: str = "1") -> list[int]:
    status, reply = cluster.produce(topic, values, partition=partition, acks=acks)
    assert status == 207, reply
    assert reply["failures"] == []
    return [s["offset"] for s in reply["successes"]]


def test_records_survive_a_clean_restart_and_a_kill_minus_nine(clusters: Clusters) -> None:
    cluster = clusters.start(SPEC)
    cluster.create_topic("orders", partitions=2)
    first = [f"clean-{i}" for i in range(300)]
    assert _produce_batch(cluster, "orders", first, partition=0) == list(range(300))
    broker = cluster.brokers[1]
    assert broker.stop() == 0
    broker.start()
    assert read_all(cluster, "orders", 0) == list(enumerate(first))

    second = [f"acked-{i}" for i in range(200)]
    assert _produce_batch(cluster, "orders", second, partition=0, acks="1") == list(range(300, 500))
    broker.kill()
    broker.start()
    assert read_all(cluster, "orders", 0) == list(enumerate(first + second))
    assert read_all(cluster, "orders", 1) == []
    assert _produce_batch(cluster, "orders", ["after"], partition=0) == [500]


def test_binary_batches_round_trip_and_corrupt_batches_append_nothing(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-raw"
    cluster.create_topic(topic)
    batch = encode_batch([RecordInput(b"k", b"v1"), RecordInput(b"k", b"v2")])
    request = urllib.request.Request(
        f"{cluster.base()}/topics/{topic}/partitions/0/batches?acks=all",
        data=batch,
        method="POST",
        headers={"Content-Type": "application/vnd.kafka.batch.v2"},
    )
    with urllib.request.urlopen(request) as response:
        reply = json.loads(response.read())
    assert (reply["base_offset"], reply["last_offset"]) == (0, 1)

    corrupt = bytearray(batch)
    corrupt[-1] ^= 0xFF
    request = urllib.request.Request(
        f"{cluster.base()}/topics/{topic}/partitions/0/batches",
        data=bytes(corrupt),
        method="POST",
        headers={"Content-Type": "application/vnd.kafka.batch.v2"},
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    body = json.loads(raised.value.read())
    assert raised.value.code == 400 and body["error"] == "CORRUPT_MESSAGE"

    request = urllib.request.Request(
        f"{cluster.base()}/topics/{topic}/partitions/0/records?offset=0",
        headers={"Accept": "application/vnd.kafka.batch.v2"},
    )
    with urllib.request.urlopen(request) as response:
        raw = response.read()
        assert response.headers["X-High-Watermark"] == "2"
    assert [r.value for r in iter_records(raw)] == [b"v1", b"v2"]


def test_json_produce_types_and_headers_read_back(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-typed"
    cluster.create_topic(topic)
    record = {
        "partition_id": 0,
        "headers": [{"name": "trace", "value": base64.b64encode(b"abc").decode()}],
        "key": {"type": "BINARY", "data": base64.b64encode(b"\x00\x01").decode()},
        "value": {"type": "JSON", "data": {"n": 1, "s": "x"}},
    }
    status, reply = cluster.v3("POST", f"/topics/{topic}/records", record)
    assert status == 200 and reply["offset"] == 0
    status, reply = cluster.v3("GET", f"/topics/{topic}/partitions/0/records?offset=0")
    [read] = reply["data"]
    assert base64.b64decode(read["key"]["data"]) == b"\x00\x01"
    assert json.loads(base64.b64decode(read["value"]["data"])) == {"n": 1, "s": "x"}
    assert read["headers"][0]["name"] == "trace"
