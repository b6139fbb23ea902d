"""Idempotent produce against real brokers: a retried batch lands once, also after a leader SIGKILL."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from tests.support.brokers import BrokerCluster, http_json

pytestmark = pytest.mark.integration

FAST = {
    "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": "2000",
    "HIGHWATER_BROKER_HEARTBEAT_INTERVAL_MS": "300",
}


@pytest.fixture
def cluster(tmp_path: Path):
    cluster = BrokerCluster(tmp_path, 3)
    for broker in cluster.brokers.values():
        broker.env.update(FAST)
    cluster.start()
    yield cluster
    cluster.shutdown()


def _post_batch(url: str, batch: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=batch, method="POST", headers={"Content-Type": "application/vnd.kafka.batch.v2"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _partition(cluster: BrokerCluster, base: str) -> dict:
    return http_json("GET", f"{base}/topics/idem/partitions/0")[1]


def _read_values(url: str) -> list[bytes]:
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.kafka.batch.v2"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return [record.value for record in iter_records(reply.read())]


def test_a_retried_batch_lands_once_even_after_the_leader_dies(cluster: BrokerCluster) -> None:
    cid = cluster.cluster_id()
    base = f"{cluster.any_url()}/v3/clusters/{cid}"
    status, _ = http_json(
        "POST",
        f"{base}/topics",
        {
            "topic_name": "idem",
            "partitions_count": 1,
            "replication_factor": 3,
            "configs": [{"name": "min.insync.replicas", "value": "2"}],
        },
    )
    assert status == 201
    status, ids = http_json("POST", f"{base}/producer-ids")
    assert status == 200
    producer_id, epoch = ids["producer_id"], ids["producer_epoch"]

    def batch(sequence: int, values: list[bytes]) -> bytes:
        return encode_batch(
            [RecordInput(None, v) for v in values],
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=sequence,
        )

    first, second = batch(0, [b"a", b"b"]), batch(2, [b"c"])
    leader = _partition(cluster, base)["leader_id"]
    leader_url = cluster.brokers[leader].url
    path = f"/v3/clusters/{cid}/topics/idem/partitions/0/batches?acks=all"
    assert _post_batch(leader_url + path, first)[1]["base_offset"] == 0
    assert _post_batch(leader_url + path, second)[1]["base_offset"] == 2
    status, retried = _post_batch(leader_url + path, first)
    assert (status, retried["base_offset"], retried["last_offset"]) == (200, 0, 1)

    cluster.brokers[leader].kill()
    deadline = time.monotonic() + 30
    new_url = None
    while time.monotonic() < deadline:
        state = http_json("GET", f"{cluster.any_url()}/v3/clusters/{cid}/topics/idem/partitions/0")[1]
        if state.get("leader_id", -1) not in (-1, leader):
            new_url = cluster.brokers[state["leader_id"]].url
            break
        time.sleep(0.1)
    assert new_url is not None, "no new leader after the SIGKILL"
    status, retried = _post_batch(new_url + path, second)
    assert (status, retried["base_offset"]) == (200, 2)
    status, gap = _post_batch(new_url + path, batch(9, [b"x"]))
    assert (status, gap["error"]) == (422, "OUT_OF_ORDER_SEQUENCE_NUMBER")
    assert _post_batch(new_url + path, batch(3, [b"d"]))[1]["base_offset"] == 3
    values = _read_values(f"{new_url}/v3/clusters/{cid}/topics/idem/partitions/0/records?offset=0")
    assert values == [b"a", b"b", b"c", b"d"]


def test_a_producer_whose_state_retention_removed_can_produce_again(tmp_path: Path) -> None:
    """Retention deletes every batch of an idle producer; after a restart the state rebuilt
    from the log no longer knows it, and its next sequence is accepted (Kafka's rule) instead
    of being refused with OUT_OF_ORDER_SEQUENCE_NUMBER for ever."""
    cluster = BrokerCluster(tmp_path, 1)
    broker = cluster.brokers[1]
    broker.env.update({**FAST, "HIGHWATER_LOG_RETENTION_CHECK_INTERVAL_MS": "100"})
    cluster.start()
    try:
        cid = cluster.cluster_id()
        base = f"{broker.url}/v3/clusters/{cid}"
        configs = {"segment.bytes": "1024", "retention.bytes": "1"}
        status, _ = http_json(
            "POST",
            f"{base}/topics",
            {
                "topic_name": "idem",
                "partitions_count": 1,
                "replication_factor": 1,
                "configs": [{"name": name, "value": value} for name, value in configs.items()],
            },
        )
        assert status == 201
        ids = http_json("POST", f"{base}/producer-ids")[1]
        producer_id, epoch = ids["producer_id"], ids["producer_epoch"]
        path = f"{base}/topics/idem/partitions/0/batches?acks=1"
        big = b"x" * 1500

        def idempotent(sequence: int) -> bytes:
            return encode_batch(
                [RecordInput(None, big)], producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence
            )

        assert _post_batch(path, idempotent(0))[1]["base_offset"] == 0
        assert _post_batch(path, encode_batch([RecordInput(None, big)]))[1]["base_offset"] == 1
        deadline = time.monotonic() + 20
        while _partition(cluster, base)["log_start_offset"] < 1:
            assert time.monotonic() < deadline, "retention did not delete the producer's segment"
            time.sleep(0.05)

        epoch_before_restart = _partition(cluster, base)["leader_epoch"]
        broker.stop()
        broker.start()

        def leads_again() -> bool:
            """The stale record still names broker 1 at the old epoch; it leads once the
            controller has fenced its old incarnation with a new leader epoch."""
            state = _partition(cluster, base)
            return state.get("leader_id") == 1 and state.get("leader_epoch", -1) > epoch_before_restart

        deadline = time.monotonic() + 20
        while not leads_again():
            assert time.monotonic() < deadline, "the restarted broker did not lead again"
            time.sleep(0.05)
        status, answer = _post_batch(path, idempotent(1))
        assert (status, answer.get("base_offset")) == (200, 2), answer
        status, retried = _post_batch(path, idempotent(1))
        assert (status, retried["base_offset"]) == (200, 2)
        status, gap = _post_batch(path, idempotent(5))
        assert (status, gap["error"]) == (422, "OUT_OF_ORDER_SEQUENCE_NUMBER")
    finally:
        cluster.shutdown()
