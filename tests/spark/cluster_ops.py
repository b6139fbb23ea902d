"""Blocking helpers the Spark tests and the benchmark use against a real cluster.

Records go in as binary record batches posted to the partition leader, so a test
controls ``acks`` exactly (``acks=1`` lets a leader's log end run ahead of its high
watermark while a follower is paused).
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Sequence

from broker.record.codec import encode_batch
from tests.support.brokers import BrokerCluster, http_json

BATCH_CONTENT_TYPE = "application/vnd.kafka.batch.v2"


def create_topic(
    cluster: BrokerCluster,
    topic: str,
    partitions: int = 1,
    replication_factor: int = 3,
    configs: dict[str, str] | None = None,
) -> None:
    body = {
        "topic_name": topic,
        "partitions_count": partitions,
        "replication_factor": replication_factor,
        "configs": [{"name": name, "value": value} for name, value in (configs or {}).items()],
    }
    status, answer = http_json("POST", f"{cluster.any_url()}/v3/clusters/{cluster.cluster_id()}/topics", body)
    assert status == 201, answer
    wait_for_leaders(cluster, topic, partitions)


def partitions(cluster: BrokerCluster, topic: str) -> list[dict]:
    url = f"{cluster.any_url()}/v3/clusters/{cluster.cluster_id()}/topics/{topic}/partitions"
    status, answer = http_json("GET", url)
    assert status == 200, answer
    return sorted(answer["data"], key=lambda item: item["partition_id"])


def wait_for_leaders(cluster: BrokerCluster, topic: str, count: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        items = partitions(cluster, topic)
        if len(items) == count and all(item["leader_id"] is not None and item["leader_id"] >= 0 for item in items):
            return
        time.sleep(0.1)
    raise AssertionError(f"{topic}: no leader for every partition after {timeout_s} s")


def leader_url(cluster: BrokerCluster, topic: str, partition: int) -> str:
    return cluster.brokers[partitions(cluster, topic)[partition]["leader_id"]].url


def produce(
    cluster: BrokerCluster,
    topic: str,
    partition: int,
    values: Sequence[bytes],
    *,
    acks: str = "all",
    keys: Sequence[bytes | None] | None = None,
    records_per_batch: int = 1000,
    headers: Sequence[tuple[str, bytes]] = (),
) -> list[tuple[int, int]]:
    """Post ``values`` to the partition leader in batches; the (base, last) offset of each batch."""
    cluster_id = cluster.cluster_id()
    url = leader_url(cluster, topic, partition)
    path = f"{url}/v3/clusters/{cluster_id}/topics/{topic}/partitions/{partition}/batches?acks={acks}"
    acked = []
    for first in range(0, len(values), records_per_batch):
        chunk = values[first : first + records_per_batch]
        chunk_keys = keys[first : first + records_per_batch] if keys is not None else [None] * len(chunk)
        body = encode_batch([(key, value, list(headers)) for key, value in zip(chunk_keys, chunk)])
        request = urllib.request.Request(path, data=body, method="POST", headers={"Content-Type": BATCH_CONTENT_TYPE})
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        acked.append((answer["base_offset"], answer["last_offset"]))
    return acked
