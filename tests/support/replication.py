"""What the replication tests ask a harness ``Cluster`` beyond the harness itself.

The harness (``tests.support.cluster``) starts the brokers and creates topics; a
replication test also needs the partition exactly as the REST API describes it (each
replica's log end offset, broker epoch and ``in_sync`` flag), single-record produces
whose answer is that record's own status and error, every readable record with its
offset, an unreplicated tail written on purpose, and, once the brokers are stopped, a
byte-for-byte comparison of the replicas' segment files. The comparison opens each
partition directory with ``PartitionLog``, so it sees what is on disk, not what a
leader chooses to serve.
"""

from __future__ import annotations

import json
import time
from typing import Any

from broker.record.decode import iter_records
from broker.record.header import iter_batches
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from broker.storage.log_manager import partition_directory_name
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until

TOPIC = "replicated"
"""The topic of a test that has a cluster of its own."""

Description = dict[str, Any]
"""One partition as ``GET .../partitions`` describes it."""


def create_replicated(cluster: Cluster, topic: str = TOPIC, min_insync_replicas: int = 2) -> Description:
    """One partition on every broker (at most 3), ``min.insync.replicas`` as given; its description once all in sync."""
    cluster.create_topic(topic, configs={"min.insync.replicas": min_insync_replicas})
    return describe(cluster, topic)


def describe(cluster: Cluster, topic: str = TOPIC, partition: int = 0, via: int | None = None) -> Description:
    """The partition with the fields ``PartitionState`` leaves out (log start and end, each replica's state)."""
    status, answer = cluster.v3("GET", f"/topics/{topic}/partitions", via=via, timeout_s=5)
    assert status == 200, answer
    return next(p for p in answer["data"] if p["partition_id"] == partition)


def wait_for_isr(cluster: Cluster, topic: str, expected: set[int], timeout_s: float = 15.0) -> Description:
    """Until the ISR is exactly ``expected`` and led by one of them."""

    def isr_matches() -> Description | None:
        description = describe(cluster, topic)
        in_sync = set(description["isr"]) == expected and description["leader_id"] in expected
        return description if in_sync else None

    return wait_until(isr_matches, f"the ISR of {topic} to be {sorted(expected)}", timeout_s)


def wait_for_leader(
    cluster: Cluster, topic: str = TOPIC, excluding: int | None = None, timeout_s: float = 15.0
) -> Description:
    """Until a broker other than ``excluding`` leads and answers as leader (it reports its replicas' state)."""

    def led() -> Description | None:
        description = describe(cluster, topic)
        leader = description["leader_id"]
        if leader < 0 or leader == excluding or description["replicas_state"] is None:
            return None
        return description

    return wait_until(led, f"a leader of {topic} other than {excluding}", timeout_s)


def produce_one(
    cluster: Cluster,
    topic: str,
    value: str,
    acks: str = "all",
    timeout_ms: int = 5000,
    via: int | None = None,
) -> tuple[int, dict[str, Any]]:
    """One record through the single-record route: its own status and error (``NOT_ENOUGH_REPLICAS``...),
    with the produce timeout a test of a stalled acks=all chooses."""
    body = {"partition_id": 0, "value": {"type": "STRING", "data": value}}
    path = f"/topics/{topic}/records?acks={acks}&timeout_ms={timeout_ms}"
    status, answer = cluster.v3("POST", path, body, via=via, timeout_s=timeout_ms / 1000 + 5)
    return status, answer


def produce_ok(cluster: Cluster, topic: str, value: str, acks: str = "all", timeout_ms: int = 5000) -> int:
    """``produce_one`` that must succeed; the record's offset."""
    status, answer = produce_one(cluster, topic, value, acks, timeout_ms)
    assert status == 200, answer
    return int(answer["offset"])


def fetch_page(
    cluster: Cluster,
    topic: str,
    offset: int,
    via: int | None = None,
    max_records: int = 500,
    timeout_ms: int = 0,
    partition: int = 0,
) -> tuple[int, dict[str, Any]]:
    """One page of string records from ``offset`` as (status, body); ``timeout_ms`` long-polls."""
    query = f"offset={offset}&format=string&max_records={max_records}&timeout_ms={timeout_ms}"
    return cluster.v3("GET", f"/topics/{topic}/partitions/{partition}/records?{query}", via=via)


def read_page(
    cluster: Cluster, topic: str, offset: int, via: int | None = None, timeout_ms: int = 0, partition: int = 0
) -> dict[str, Any]:
    status, answer = fetch_page(cluster, topic, offset, via, timeout_ms=timeout_ms, partition=partition)
    assert status == 200, answer
    return answer


def read_all(cluster: Cluster, topic: str = TOPIC, partition: int = 0, via: int | None = None) -> list[tuple[int, str]]:
    """Every record a consumer can read, with its offset, from offset 0 up to the high watermark."""
    records: list[tuple[int, str]] = []
    offset = 0
    while True:
        page = read_page(cluster, topic, offset, via, partition=partition)
        if not page["data"]:
            return records
        records += [(r["offset"], r["value"]["data"]) for r in page["data"]]
        offset = page["next_offset"]


def write_unreplicated_tail_then_kill_leader(
    cluster: Cluster, leader: int, count: int, label: str = "unreplicated", exposed_s: float = 0.0
) -> list[tuple[int, str]]:
    """acks=1 writes to ``TOPIC``'s leader while its followers are stopped, then SIGKILL the leader.

    The leader keeps the tail for ``exposed_s`` before dying, so readers can poll it
    meanwhile. The pause stays far shorter than the lag time and the session timeout,
    so the followers remain in the ISR and one of them can be elected cleanly.
    """
    followers = [broker for broker_id, broker in sorted(cluster.brokers.items()) if broker_id != leader]
    for follower in followers:
        follower.pause()
    try:
        tail = []
        for i in range(count):
            status, answer = produce_one(cluster, TOPIC, f"{label}-{i}", acks="1", via=leader)
            assert status == 200, answer
            tail.append((answer["offset"], f"{label}-{i}"))
        # The exposure is a span of time by nature: no condition says "every reader has had
        # its chance", since a reader's long poll in flight to a paused follower is stuck
        # until the kill; and the span must stay far below the lag time (see above).
        time.sleep(exposed_s)
        cluster.brokers[leader].kill()
    finally:
        for follower in followers:
            follower.resume()
    return tail


def truncations(cluster: Cluster, broker_id: int) -> list[dict[str, Any]]:
    """Every truncation a broker's log reported (its structured ``log.truncated*`` events)."""
    events = []
    for line in cluster.brokers[broker_id].log_path.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"log.truncated' in line:
            events.append(json.loads(line))
    return events


def replica_log_bytes(cluster: Cluster, broker_id: int, topic: str = TOPIC, partition: int = 0) -> bytes:
    """The whole log of one replica as raw batch bytes, read from its segment files.

    Call only with the broker stopped: ``PartitionLog.open`` runs recovery, as the
    broker would at its next start, and the bytes it then serves are the replica.
    """
    directory = cluster.brokers[broker_id].data_dir / partition_directory_name(topic, partition)
    log = PartitionLog.open(directory, LogConfig(), topic=topic, partition=partition)
    try:
        chunks, offset = [], log.log_start_offset
        while offset < log.log_end_offset:
            result = log.read(offset, 1 << 20)
            chunks.append(result.data)
            offset = result.next_offset
        return b"".join(chunks)
    finally:
        log.close()


def decode_values(raw: bytes) -> list[tuple[int, str]]:
    """Each record's offset and value as text (every record these tests write has a value)."""
    decoded = []
    for record in iter_records(raw):
        assert record.value is not None, f"a record without a value at offset {record.offset}"
        decoded.append((record.offset, record.value.decode()))
    return decoded


def batch_epochs(raw: bytes) -> list[int]:
    return [header.partition_leader_epoch for header in iter_batches(raw, check_crc=True)]


def assert_replica_files_identical(cluster: Cluster, topic: str = TOPIC, partition: int = 0) -> bytes:
    """Stop every broker, then require byte-identical logs on all replicas; return them."""
    cluster.shutdown()
    logs = {broker_id: replica_log_bytes(cluster, broker_id, topic, partition) for broker_id in cluster.brokers}
    reference = logs[1]
    for broker_id, raw in logs.items():
        assert raw == reference, (
            f"replica {broker_id} differs from replica 1: {decode_values(raw)[-5:]} vs {decode_values(reference)[-5:]}"
        )
    return reference
