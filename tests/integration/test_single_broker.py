"""One real ``highwater serve`` process: produce, restart (clean and kill -9), read everything back."""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from tests.support.brokers import BrokerCluster, http_json

pytestmark = pytest.mark.integration


@pytest.fixture
def cluster(tmp_path: Path):
    cluster = BrokerCluster(tmp_path, 1).start()
    yield cluster
    cluster.shutdown()


def _base(cluster: BrokerCluster) -> str:
    return f"{cluster.any_url()}/v3/clusters/{cluster.cluster_id()}"


def _create(base: str, name: str, partitions: int = 2, configs: dict[str, str] | None = None) -> None:
    body = {
        "topic_name": name,
        "partitions_count": partitions,
        "replication_factor": 1,
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
    }
    status, reply = http_json("POST", f"{base}/topics", body)
    assert status == 201, reply


def _produce_batch(base: str, topic: str, values: list[str], partition: int, acks: str = "1") -> list[int]:
    entries = [{"partition_id": partition, "value": {"type": "STRING", "data": v}} for v in values]
    status, reply = http_json("POST", f"{base}/topics/{topic}/records:batch?acks={acks}", {"entries": entries})
    assert status == 207, reply
    assert reply["failures"] == []
    return [s["offset"] for s in reply["successes"]]


def _read_all(base: str, topic: str, partition: int) -> list[tuple[int, str]]:
    records, offset = [], 0
    while True:
        status, reply = http_json(
            "GET", f"{base}/topics/{topic}/partitions/{partition}/records?offset={offset}&format=string&max_records=500"
        )
        assert status == 200, reply
        if not reply["data"]:
            return records
        records += [(r["offset"], r["value"]["data"]) for r in reply["data"]]
        offset = reply["next_offset"]


def test_records_survive_a_clean_restart_and_a_kill_minus_nine(cluster: BrokerCluster) -> None:
    base = _base(cluster)
    _create(base, "orders", partitions=2)
    first = [f"clean-{i}" for i in range(300)]
    assert _produce_batch(base, "orders", first, partition=0) == list(range(300))
    broker = cluster.brokers[1]
    assert broker.stop() == 0
    broker.start()
    base = _base(cluster)
    assert _read_all(base, "orders", 0) == list(enumerate(first))

    second = [f"acked-{i}" for i in range(200)]
    assert _produce_batch(base, "orders", second, partition=0, acks="1") == list(range(300, 500))
    broker.kill()
    broker.start()
    base = _base(cluster)
    assert _read_all(base, "orders", 0) == list(enumerate(first + second))
    assert _read_all(base, "orders", 1) == []
    assert _produce_batch(base, "orders", ["after"], partition=0) == [500]


def test_binary_batches_round_trip_and_corrupt_batches_append_nothing(cluster: BrokerCluster) -> None:
    base = _base(cluster)
    _create(base, "raw", partitions=1)
    batch = encode_batch([RecordInput(b"k", b"v1"), RecordInput(b"k", b"v2")])
    request = urllib.request.Request(
        f"{base}/topics/raw/partitions/0/batches?acks=all",
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
        f"{base}/topics/raw/partitions/0/batches",
        data=bytes(corrupt),
        method="POST",
        headers={"Content-Type": "application/vnd.kafka.batch.v2"},
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    body = json.loads(raised.value.read())
    assert raised.value.code == 400 and body["error"] == "CORRUPT_MESSAGE"

    request = urllib.request.Request(
        f"{base}/topics/raw/partitions/0/records?offset=0", headers={"Accept": "application/vnd.kafka.batch.v2"}
    )
    with urllib.request.urlopen(request) as response:
        raw = response.read()
        assert response.headers["X-High-Watermark"] == "2"
    assert [r.value for r in iter_records(raw)] == [b"v1", b"v2"]


def test_json_produce_types_and_headers_read_back(cluster: BrokerCluster) -> None:
    base = _base(cluster)
    _create(base, "typed", partitions=1)
    record = {
        "partition_id": 0,
        "headers": [{"name": "trace", "value": base64.b64encode(b"abc").decode()}],
        "key": {"type": "BINARY", "data": base64.b64encode(b"\x00\x01").decode()},
        "value": {"type": "JSON", "data": {"n": 1, "s": "x"}},
    }
    status, reply = http_json("POST", f"{base}/topics/typed/records", record)
    assert status == 200 and reply["offset"] == 0
    status, reply = http_json("GET", f"{base}/topics/typed/partitions/0/records?offset=0")
    [read] = reply["data"]
    assert base64.b64decode(read["key"]["data"]) == b"\x00\x01"
    assert json.loads(base64.b64decode(read["value"]["data"])) == {"n": 1, "s": "x"}
    assert read["headers"][0]["name"] == "trace"
