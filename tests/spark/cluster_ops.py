"""Binary record batches posted to a partition leader, for the Spark tests.

A test controls ``acks`` exactly (``acks=1`` lets a leader's log end run ahead of its
high watermark while a follower is paused), and keys and headers go as the connector
reads them back. Topics come from ``Cluster.create_topic``.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Sequence
from typing import Any

from broker.record.codec import encode_batch
from tests.support.cluster import Cluster

BATCH_CONTENT_TYPE = "application/vnd.kafka.batch.v2"


def partitions(cluster: Cluster, topic: str) -> list[dict[str, Any]]:
    """``topic``'s partitions as the REST API describes them (log start and end offsets included), in order."""
    answer = cluster.api("GET", f"/topics/{topic}/partitions")
    return sorted(answer["data"], key=lambda item: item["partition_id"])


def wait_for_retention(cluster: Cluster, topic: str) -> int:
    """Until retention has removed a segment of ``topic``-0; its log start offset then."""
    return int(
        cluster.wait_until(
            lambda: partitions(cluster, topic)[0]["log_start_offset"], f"retention to remove a segment of {topic}-0"
        )
    )


def produce(
    cluster: Cluster,
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
    leader = cluster.partitions(topic)[partition].leader_id
    path = f"{cluster.base(leader)}/topics/{topic}/partitions/{partition}/batches?acks={acks}"
    acked = []
    for first in range(0, len(values), records_per_batch):
        chunk = values[first : first + records_per_batch]
        chunk_keys = keys[first : first + records_per_batch] if keys is not None else [None] * len(chunk)
        body = encode_batch([(key, value, list(headers)) for key, value in zip(chunk_keys, chunk, strict=True)])
        request = urllib.request.Request(path, data=body, method="POST", headers={"Content-Type": BATCH_CONTENT_TYPE})
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
        acked.append((answer["base_offset"], answer["last_offset"]))
    return acked
