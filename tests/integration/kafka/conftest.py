"""A real 3-broker cluster whose brokers each run a Kafka listener, for the real Kafka clients.

Each broker listens for Kafka clients on its own free port (``free_port``: no fixed
ports, disjoint per xdist worker). Sessions and the replica lag time are long enough
that a follower paused for a few seconds stays registered and in the ISR, so a test
can hold the high watermark still on purpose.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.brokers import BrokerCluster, free_port, http_json
from tests.support.replication import FAST_ENV, wait_until

KAFKA_ENV = {
    **FAST_ENV,
    "HIGHWATER_REPLICA_LAG_TIME_MAX_MS": "15000",
    "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": "15000",
    "HIGHWATER_BROKER_HEARTBEAT_INTERVAL_MS": "500",
}


@dataclass
class KafkaCluster:
    cluster: BrokerCluster
    kafka_addresses: dict[int, str]
    cluster_id: str

    def bootstrap(self, *broker_ids: int) -> str:
        """``bootstrap.servers`` of the given brokers (all of them by default)."""
        return ",".join(self.kafka_addresses[b] for b in broker_ids or sorted(self.kafka_addresses))

    def topics_url(self) -> str:
        return f"{self.cluster.any_url()}/v3/clusters/{self.cluster_id}/topics"

    def create_topic(self, name: str, partitions: int = 1, min_insync_replicas: int = 2) -> dict[int, dict]:
        """RF 3; returns each partition's description once every replica is in sync."""
        body = {
            "topic_name": name,
            "partitions_count": partitions,
            "replication_factor": 3,
            "configs": [{"name": "min.insync.replicas", "value": str(min_insync_replicas)}],
        }
        status, reply = http_json("POST", self.topics_url(), body)
        assert status == 201, reply

        def in_sync() -> dict[int, dict] | None:
            status, reply = http_json("GET", f"{self.topics_url()}/{name}/partitions", timeout_s=5)
            described = {p["partition_id"]: p for p in reply.get("data", [])} if status == 200 else {}
            full = len(described) == partitions and all(len(p["isr"]) == 3 for p in described.values())
            return described if full else None

        return wait_until(in_sync, 20, f"topic {name} fully in sync")


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = BrokerCluster(tmp_path_factory.mktemp("kafka-cluster"), 3)
    addresses = {}
    for broker_id, broker in cluster.brokers.items():
        addresses[broker_id] = f"127.0.0.1:{free_port()}"
        broker.env = {**KAFKA_ENV, "HIGHWATER_KAFKA_LISTENER": addresses[broker_id]}
    cluster.start()
    try:
        yield KafkaCluster(cluster, addresses, cluster.cluster_id())
    finally:
        cluster.shutdown()
