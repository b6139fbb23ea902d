"""The Kafka tier: harness clusters whose brokers each run a Kafka listener, for the real Kafka clients.

Each broker listens for Kafka clients on its own free port (the harness's ``kafka=True``).
Sessions and the replica lag time are long enough that a follower paused for a few
seconds stays registered and in the ISR, so a test can hold the high watermark still
on purpose. Consumer-protocol (KIP-848) members heartbeat every 500 ms, so a
rebalance takes a second or two instead of Kafka's 5 s beats. A module's tests share one ``kafka_cluster``; a test that kills or pauses a
broker starts its own (``clusters.start(KAFKA_SPEC)``).
"""

from __future__ import annotations

from tests.support.cluster import ClusterSpec, cluster_fixture

KAFKA_SETTINGS: dict[str, object] = {
    "replica_lag_time_max_ms": 15000,
    "broker_session_timeout_ms": 15000,
    "broker_heartbeat_interval_ms": 500,
    "group_consumer_heartbeat_interval_ms": 500,
}
KAFKA_SPEC = ClusterSpec(kafka=True, settings=KAFKA_SETTINGS)
MIN_ISR_2: dict[str, object] = {"min.insync.replicas": 2}
"""The topic configs the tier's topics were always made with: acks=all needs two replicas."""

kafka_cluster = cluster_fixture(KAFKA_SPEC, scope="module")
