"""Shared steps of the replication integration tests: a 3-broker cluster with short
timeouts, topics with RF 3 and min ISR 2, produce, wait for the ISR, read everything,
and compare the replicas' segment files byte for byte.

Everything talks to real broker processes over HTTP (``tests.support.brokers``); the
file comparison opens each stopped broker's partition directory with ``PartitionLog``
so it sees exactly what is on disk, not what a leader chooses to serve.
"""

from __future__ import annotations

import json
import time
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from broker.record.decode import iter_records
from broker.record.header import iter_batches
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from broker.storage.log_manager import partition_directory_name
from tests.support.brokers import BrokerCluster, http_json

T = TypeVar("T")

REPLICA_LAG_TIME_MAX_MS = 2000
BROKER_SESSION_TIMEOUT_MS = 2000
BROKER_HEARTBEAT_INTERVAL_MS = 300
FAST_ENV = {
    "HIGHWATER_REPLICA_LAG_TIME_MAX_MS": str(REPLICA_LAG_TIME_MAX_MS),
    "HIGHWATER_REPLICA_FETCH_WAIT_MAX_MS": "200",
    "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": str(BROKER_SESSION_TIMEOUT_MS),
    "HIGHWATER_BROKER_HEARTBEAT_INTERVAL_MS": str(BROKER_HEARTBEAT_INTERVAL_MS),
    "HIGHWATER_REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS": "500",
    "HIGHWATER_AUTO_LEADER_REBALANCE_ENABLE": "false",
}
"""Short timeouts so a failure is detected in about two seconds, not ten."""

TOPIC = "replicated"
REQUEST_ERRORS = (urllib.error.URLError, ConnectionError, TimeoutError, OSError)


def start_cluster(root: Path, count: int = 3, env: dict[str, str] | None = None) -> BrokerCluster:
    cluster = BrokerCluster(root, count)
    for broker in cluster.brokers.values():
        broker.env = {**FAST_ENV, **(env or {})}
    return cluster.start()


def wait_until(condition: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll ``condition`` until it returns a truthy value; fail with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except REQUEST_ERRORS as error:
            last_error = error
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what} (last error: {last_error})")


@dataclass
class ReplicatedTopic:
    """One topic of the cluster, reached through whichever broker is alive."""

    cluster: BrokerCluster
    name: str = TOPIC
    partition: int = 0
    cluster_id: str = ""

    def __post_init__(self) -> None:
        self.cluster_id = self.cluster_id or self.cluster.cluster_id()

    def base(self, broker_id: int | None = None) -> str:
        url = self.cluster.brokers[broker_id].url if broker_id is not None else self.cluster.any_url()
        return f"{url}/v3/clusters/{self.cluster_id}/topics/{self.name}"

    def create(self, replication_factor: int = 3, min_insync_replicas: int = 2) -> dict:
        body = {
            "topic_name": self.name,
            "partitions_count": 1,
            "replication_factor": replication_factor,
            "configs": [{"name": "min.insync.replicas", "value": str(min_insync_replicas)}],
        }
        url = f"{self.cluster.any_url()}/v3/clusters/{self.cluster_id}/topics"
        status, reply = http_json("POST", url, body)
        assert status == 201, reply
        return self.wait_for_isr(set(range(1, replication_factor + 1)))

    def describe(self, via: int | None = None) -> dict:
        status, reply = http_json("GET", f"{self.base(via)}/partitions", timeout_s=5)
        assert status == 200, reply
        return reply["data"][self.partition]

    def wait_for_isr(self, expected: set[int], timeout_s: float = 15.0) -> dict:
        def isr_matches() -> dict | None:
            description = self.describe()
            in_sync = set(description["isr"]) == expected and description["leader_id"] in expected
            return description if in_sync else None

        return wait_until(isr_matches, timeout_s, f"ISR == {sorted(expected)}")

    def wait_for_leader(self, excluding: int | None = None, timeout_s: float = 15.0) -> dict:
        """Wait until a live broker other than ``excluding`` leads and answers as leader."""

        def led() -> dict | None:
            description = self.describe()
            leader = description["leader_id"]
            if leader < 0 or leader == excluding or description["replicas_state"] is None:
                return None
            return description

        return wait_until(led, timeout_s, f"a leader other than {excluding}")

    def produce(
        self, value: str, acks: str = "all", timeout_ms: int = 5000, via: int | None = None
    ) -> tuple[int, dict]:
        body = {"partition_id": self.partition, "value": {"type": "STRING", "data": value}}
        url = f"{self.base(via)}/records?acks={acks}&timeout_ms={timeout_ms}"
        return http_json("POST", url, body, timeout_s=timeout_ms / 1000 + 5)

    def produce_ok(self, value: str, acks: str = "all", timeout_ms: int = 5000) -> int:
        status, reply = self.produce(value, acks, timeout_ms)
        assert status == 200, reply
        return reply["offset"]

    def fetch_page(
        self, offset: int, via: int | None = None, max_records: int = 500, timeout_ms: int = 0
    ) -> tuple[int, dict]:
        """One page of records from ``offset`` as (status, body); ``timeout_ms`` long-polls."""
        query = f"offset={offset}&format=string&max_records={max_records}&timeout_ms={timeout_ms}"
        return http_json("GET", f"{self.base(via)}/partitions/{self.partition}/records?{query}", timeout_s=10)

    def read_page(self, offset: int, via: int | None = None, max_records: int = 500, timeout_ms: int = 0) -> dict:
        status, reply = self.fetch_page(offset, via, max_records, timeout_ms)
        assert status == 200, reply
        return reply

    def read_all(self, via: int | None = None) -> list[tuple[int, str]]:
        """Every record a consumer can read, from offset 0 up to the HW."""
        records: list[tuple[int, str]] = []
        offset = 0
        while True:
            page = self.read_page(offset, via)
            if not page["data"]:
                return records
            records += [(r["offset"], r["value"]["data"]) for r in page["data"]]
            offset = page["next_offset"]


def write_unreplicated_tail_then_kill_leader(
    topic: ReplicatedTopic, leader: int, count: int, label: str = "unreplicated", exposed_s: float = 0.0
) -> list[tuple[int, str]]:
    """acks=1 writes straight to the leader while its followers are stopped, then SIGKILL it.

    The leader keeps the tail for ``exposed_s`` before dying, so readers can poll it
    meanwhile. The pause stays far shorter than the lag time and the session timeout,
    so the followers remain in the ISR and one of them can be elected cleanly.
    """
    followers = [broker for broker_id, broker in sorted(topic.cluster.brokers.items()) if broker_id != leader]
    for follower in followers:
        follower.pause()
    try:
        tail = []
        for i in range(count):
            status, reply = topic.produce(f"{label}-{i}", acks="1", via=leader)
            assert status == 200, reply
            tail.append((reply["offset"], f"{label}-{i}"))
        time.sleep(exposed_s)
        topic.cluster.brokers[leader].kill()
    finally:
        for follower in followers:
            follower.resume()
    return tail


def truncations(cluster: BrokerCluster, broker_id: int) -> list[dict]:
    """Every truncation a broker's log reported (its structured ``log.truncated*`` events)."""
    events = []
    for line in cluster.brokers[broker_id].log_path.read_text(errors="replace").splitlines():
        if line.startswith("{") and '"log.truncated' in line:
            events.append(json.loads(line))
    return events


def replica_log_bytes(cluster: BrokerCluster, broker_id: int, topic: str = TOPIC, partition: int = 0) -> bytes:
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
    return [(r.offset, r.value.decode()) for r in iter_records(raw)]


def batch_epochs(raw: bytes) -> list[int]:
    return [header.partition_leader_epoch for header in iter_batches(raw, check_crc=True)]


def assert_replica_files_identical(cluster: BrokerCluster, topic: str = TOPIC, partition: int = 0) -> bytes:
    """Stop every broker, then require byte-identical logs on all replicas; return them."""
    cluster.shutdown()
    logs = {broker_id: replica_log_bytes(cluster, broker_id, topic, partition) for broker_id in cluster.brokers}
    reference = logs[1]
    for broker_id, raw in logs.items():
        assert raw == reference, (
            f"replica {broker_id} differs from replica 1: {decode_values(raw)[-5:]} vs {decode_values(reference)[-5:]}"
        )
    return reference
