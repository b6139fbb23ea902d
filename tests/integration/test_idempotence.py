"""Idempotent produce against real brokers: a retried batch lands once, also after a leader SIGKILL."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest

from broker.record.codec import RecordInput, encode_batch
from broker.record.decode import iter_records
from tests.support.cluster import Cluster, Clusters, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

cluster = cluster_fixture(ClusterSpec())
"""Three brokers for the leader kill; the retention test starts one broker of its own."""

RETENTION_SPEC = ClusterSpec(brokers=1, settings={"log_retention_check_interval_ms": 100})


def _post_batch(url: str, batch: bytes) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, data=batch, method="POST", headers={"Content-Type": "application/vnd.kafka.batch.v2"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _partition(cluster: Cluster) -> dict[str, Any]:
    """The partition's state, or the error body while no broker can answer for it yet."""
    answer: dict[str, Any] = cluster.v3("GET", "/topics/idem/partitions/0")[1]
    return answer


def _read_values(url: str) -> list[bytes | None]:
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.kafka.batch.v2"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return [record.value for record in iter_records(reply.read())]


def _batches_of(cluster: Cluster) -> Callable[[int, list[bytes]], bytes]:
    """Encodes batches of a producer id fresh from ``cluster``."""
    status, ids = cluster.v3("POST", "/producer-ids")
    assert status == 200, ids
    producer_id, epoch = ids["producer_id"], ids["producer_epoch"]

    def batch(sequence: int, values: list[bytes]) -> bytes:
        records = [RecordInput(None, v) for v in values]
        return encode_batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)

    return batch


def test_a_retried_batch_lands_once_even_after_the_leader_dies(cluster: Cluster) -> None:
    cluster.create_topic("idem", configs={"min.insync.replicas": 2})
    batch = _batches_of(cluster)

    first, second = batch(0, [b"a", b"b"]), batch(2, [b"c"])
    leader = _partition(cluster)["leader_id"]
    path = "/topics/idem/partitions/0/batches?acks=all"
    assert _post_batch(cluster.base(leader) + path, first)[1]["base_offset"] == 0
    assert _post_batch(cluster.base(leader) + path, second)[1]["base_offset"] == 2
    status, retried = _post_batch(cluster.base(leader) + path, first)
    assert (status, retried["base_offset"], retried["last_offset"]) == (200, 0, 1)

    cluster.brokers[leader].kill()
    new_leader = cluster.wait_until(
        lambda: (elected := _partition(cluster).get("leader_id", -1)) not in (-1, leader) and elected,
        "a new leader after the SIGKILL",
    )
    new_base = cluster.base(new_leader)
    status, retried = _post_batch(new_base + path, second)
    assert (status, retried["base_offset"]) == (200, 2)
    status, gap = _post_batch(new_base + path, batch(9, [b"x"]))
    assert (status, gap["error"]) == (422, "OUT_OF_ORDER_SEQUENCE_NUMBER")
    assert _post_batch(new_base + path, batch(3, [b"d"]))[1]["base_offset"] == 3
    values = _read_values(f"{new_base}/topics/idem/partitions/0/records?offset=0")
    assert values == [b"a", b"b", b"c", b"d"]


def test_a_producer_whose_state_retention_removed_can_produce_again(clusters: Clusters) -> None:
    """Retention deletes every batch of an idle producer; after a restart the state rebuilt
    from the log no longer knows it, and its next sequence is accepted (Kafka's rule) instead
    of being refused with OUT_OF_ORDER_SEQUENCE_NUMBER for ever."""
    cluster = clusters.start(RETENTION_SPEC)
    cluster.create_topic("idem", configs={"segment.bytes": 1024, "retention.bytes": 1})
    batch = _batches_of(cluster)
    path = f"{cluster.base(1)}/topics/idem/partitions/0/batches?acks=1"
    big = b"x" * 1500

    assert _post_batch(path, batch(0, [big]))[1]["base_offset"] == 0
    assert _post_batch(path, encode_batch([RecordInput(None, big)]))[1]["base_offset"] == 1
    cluster.wait_until(
        lambda: _partition(cluster)["log_start_offset"] >= 1, "retention to delete the producer's segment", 20
    )

    epoch_before_restart = _partition(cluster)["leader_epoch"]
    broker = cluster.brokers[1]
    broker.stop()
    broker.start()

    def leads_again() -> bool:
        """The stale record still names broker 1 at the old epoch; it leads once the
        controller has fenced its old incarnation with a new leader epoch."""
        state = _partition(cluster)
        return bool(state.get("leader_id") == 1 and state.get("leader_epoch", -1) > epoch_before_restart)

    cluster.wait_until(leads_again, "the restarted broker to lead again", 20)
    status, answer = _post_batch(path, batch(1, [big]))
    assert (status, answer.get("base_offset")) == (200, 2), answer
    status, retried = _post_batch(path, batch(1, [big]))
    assert (status, retried["base_offset"]) == (200, 2)
    status, gap = _post_batch(path, batch(5, [big]))
    assert (status, gap["error"]) == (422, "OUT_OF_ORDER_SEQUENCE_NUMBER")
