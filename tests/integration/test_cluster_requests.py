"""Client requests may hit any broker of a real cluster.

The JSON produce and read endpoints forward to the partition leader, so curl against
any broker works, including one that holds no replica of the partition at all. The
binary endpoints (used by the client libraries, which route themselves) answer a
non-leader with 421 ``NOT_LEADER_OR_FOLLOWER`` naming the leader and its URL.

Nothing here breaks a broker: the module shares one cluster, each test a topic of its own.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

BATCH_TYPE = "application/vnd.kafka.batch.v2"

cluster = cluster_fixture(ClusterSpec(), scope="module")


@pytest.fixture
def topic(cluster: Cluster, prefix: str) -> str:
    """3 partitions of 2 replicas on the 3 brokers, so each partition has a leader, a follower
    and a broker without any replica of it."""
    name = f"{prefix}-routed"
    cluster.create_topic(name, partitions=3, replication_factor=2)
    return name


def binary_request(url: str, data: bytes | None = None) -> tuple[int, bytes, dict[str, str]]:
    headers = {"Content-Type": BATCH_TYPE} if data is not None else {"Accept": BATCH_TYPE}
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, error.read(), dict(error.headers)


def test_json_produce_and_read_through_every_broker_reach_the_leader(cluster: Cluster, topic: str) -> None:
    for partition, state in cluster.partitions(topic).items():
        expected: list[str] = []
        for via in sorted(cluster.brokers):
            role = "leader" if via == state.leader_id else "follower" if via in state.replicas else "outsider"
            value = f"p{partition}-via-{via}-{role}"
            status, report = cluster.v3(
                "POST",
                f"/topics/{topic}/records",
                {"partition_id": partition, "value": {"type": "STRING", "data": value}},
                via=via,
            )
            assert status == 200, (role, report)
            assert report["offset"] == len(expected)
            expected.append(value)
        for via in cluster.brokers:
            assert cluster.read(topic, partition, via=via) == expected


def test_records_batch_through_a_broker_without_a_replica_is_forwarded(cluster: Cluster, topic: str) -> None:
    states = cluster.partitions(topic)
    for partition, state in states.items():
        [outsider] = set(cluster.brokers) - set(state.replicas)
        status, reply = cluster.produce(topic, ["a", "b", "c"], partition, via=outsider)
        assert status == 207 and reply["failures"] == [], reply
        assert [s["offset"] for s in reply["successes"]] == [0, 1, 2]
        assert cluster.read(topic, partition, via=state.leader_id) == ["a", "b", "c"]


def test_offset_for_a_timestamp_is_answered_by_every_broker(cluster: Cluster, topic: str) -> None:
    state = cluster.partitions(topic)[0]
    status, first = cluster.v3(
        "POST",
        f"/topics/{topic}/records",
        {"partition_id": 0, "value": {"type": "STRING", "data": "early"}, "timestamp": 1000},
        via=state.leader_id,
    )
    assert status == 200, first
    status, _ = cluster.v3(
        "POST",
        f"/topics/{topic}/records",
        {"partition_id": 0, "value": {"type": "STRING", "data": "late"}, "timestamp": 5000},
        via=state.leader_id,
    )
    assert status == 200
    for via in sorted(cluster.brokers):
        status, body = cluster.v3("GET", f"/topics/{topic}/partitions/0/offset?timestamp=2000", via=via)
        assert status == 200, (via, body)
        assert body["offset"] == first["offset"] + 1, (via, body)


def test_binary_produce_and_fetch_on_a_non_leader_answer_421_with_the_leader(cluster: Cluster, topic: str) -> None:
    batch = encode_batch([RecordInput(b"k", b"binary")])
    for partition, state in cluster.partitions(topic).items():
        leader_url = cluster.brokers[state.leader_id].url
        path = f"/topics/{topic}/partitions/{partition}"
        for via in set(cluster.brokers) - {state.leader_id}:
            for status, body, _ in (
                binary_request(f"{cluster.base(via)}{path}/batches?acks=all", batch),
                binary_request(f"{cluster.base(via)}{path}/records?offset=0"),
            ):
                error = json.loads(body)
                assert status == 421, error
                assert error["error"] == "NOT_LEADER_OR_FOLLOWER" and error["retriable"] is True
                assert (error["leader_id"], error["leader_url"]) == (state.leader_id, leader_url)
        status, body, _ = binary_request(f"{cluster.base(state.leader_id)}{path}/batches", batch)
        assert status == 200 and json.loads(body)["base_offset"] == 0
        status, raw, headers = binary_request(f"{cluster.base(state.leader_id)}{path}/records?offset=0")
        assert status == 200 and [r.value for r in iter_records(raw)] == [b"binary"]
        assert headers["X-High-Watermark"] == "1"
