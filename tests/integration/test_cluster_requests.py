"""Client requests may hit any broker of a real cluster.

The JSON produce and read endpoints forward to the partition leader, so curl against
any broker works, including one that holds no replica of the partition at all. The
binary endpoints (used by the client libraries, which route themselves) answer a
non-leader with 421 ``NOT_LEADER_OR_FOLLOWER`` naming the leader and its URL.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from tests.integration.cluster_harness import LiveCluster
from tests.support.brokers import http_json

pytestmark = pytest.mark.integration

TOPIC = "routed"
BATCH_TYPE = "application/vnd.kafka.batch.v2"


@pytest.fixture
def cluster(tmp_path: Path, live_cluster_factory) -> LiveCluster:
    """Three brokers; ``routed`` has 3 partitions of 2 replicas, so each partition has a
    leader, a follower and a broker without any replica of it."""
    started = live_cluster_factory(f"sqlite://{(tmp_path / 'metadata.db').resolve()}")
    started.create_topic(TOPIC, partitions=3, replication_factor=2)
    return started


def binary_request(url: str, data: bytes | None = None) -> tuple[int, bytes, dict[str, str]]:
    headers = {"Content-Type": BATCH_TYPE} if data is not None else {"Accept": BATCH_TYPE}
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def test_json_produce_and_read_through_every_broker_reach_the_leader(cluster: LiveCluster) -> None:
    for partition, state in cluster.partitions(TOPIC).items():
        expected: list[str] = []
        for via in sorted(cluster.brokers):
            role = "leader" if via == state.leader_id else "follower" if via in state.replicas else "outsider"
            value = f"p{partition}-via-{via}-{role}"
            status, report = http_json(
                "POST",
                f"{cluster.base(via)}/topics/{TOPIC}/records",
                {"partition_id": partition, "value": {"type": "STRING", "data": value}},
            )
            assert status == 200, (role, report)
            assert report["offset"] == len(expected)
            expected.append(value)
        for via in cluster.brokers:
            assert cluster.read_values(TOPIC, partition, via=via) == expected


def test_records_batch_through_a_broker_without_a_replica_is_forwarded(cluster: LiveCluster) -> None:
    states = cluster.partitions(TOPIC)
    for partition, state in states.items():
        [outsider] = set(cluster.brokers) - set(state.replicas)
        status, reply = cluster.produce(TOPIC, partition, ["a", "b", "c"], via=outsider)
        assert status == 207 and reply["failures"] == [], reply
        assert [s["offset"] for s in reply["successes"]] == [0, 1, 2]
        assert cluster.read_values(TOPIC, partition, via=state.leader_id) == ["a", "b", "c"]


def test_offset_for_a_timestamp_is_answered_by_every_broker(cluster: LiveCluster) -> None:
    state = cluster.partitions(TOPIC)[0]
    status, first = http_json(
        "POST",
        f"{cluster.base(state.leader_id)}/topics/{TOPIC}/records",
        {"partition_id": 0, "value": {"type": "STRING", "data": "early"}, "timestamp": 1000},
    )
    assert status == 200, first
    status, _ = http_json(
        "POST",
        f"{cluster.base(state.leader_id)}/topics/{TOPIC}/records",
        {"partition_id": 0, "value": {"type": "STRING", "data": "late"}, "timestamp": 5000},
    )
    assert status == 200
    for via in sorted(cluster.brokers):
        status, body = http_json("GET", f"{cluster.base(via)}/topics/{TOPIC}/partitions/0/offset?timestamp=2000")
        assert status == 200, (via, body)
        assert body["offset"] == first["offset"] + 1, (via, body)


def test_binary_produce_and_fetch_on_a_non_leader_answer_421_with_the_leader(cluster: LiveCluster) -> None:
    batch = encode_batch([RecordInput(b"k", b"binary")])
    for partition, state in cluster.partitions(TOPIC).items():
        leader_url = cluster.brokers[state.leader_id].url
        path = f"/topics/{TOPIC}/partitions/{partition}"
        for via in set(cluster.brokers) - {state.leader_id}:
            for status, body, _ in (
                binary_request(f"{cluster.base(via)}{path}/batches?acks=all", batch),
                binary_request(f"{cluster.base(via)}{path}/records?offset=0"),
            ):
                error = json.loads(body)
                assert status == 421, error
                assert error["error"] == "NOT_LEADER_OR_FOLLOWER" and error["retriable"] is True
                assert (error["leader_id"], error["leader_url"]) == (state.leader_id, leader_url)
        status, body, _ = binary_request(f"{leader_url}/v3/clusters/{cluster.cluster_id}{path}/batches", batch)
        assert status == 200 and json.loads(body)["base_offset"] == 0
        status, raw, headers = binary_request(f"{leader_url}/v3/clusters/{cluster.cluster_id}{path}/records?offset=0")
        assert status == 200 and [r.value for r in iter_records(raw)] == [b"binary"]
        assert headers["X-High-Watermark"] == "1"
