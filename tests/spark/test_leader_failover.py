"""A streaming query keeps every record exactly once while its partition leader is SIGKILLed.

This module runs its own cluster with the default session timeout, so the controller
notices the dead leader and elects a new one within seconds.
"""

from __future__ import annotations

import time
import urllib.error
import uuid
from pathlib import Path

import pytest

from tests.spark.cluster_ops import create_topic, partitions, produce
from tests.spark.queries import assert_each_offset_once, delivered, servers
from tests.support.brokers import BrokerCluster

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.chaos]


@pytest.fixture(scope="module")
def failover_cluster(tmp_path_factory: pytest.TempPathFactory):
    brokers = BrokerCluster(tmp_path_factory.mktemp("spark-failover"), 3).start()
    yield brokers
    brokers.shutdown()


def produce_until_acked(cluster: BrokerCluster, topic: str, values: list[bytes], timeout_s: float = 60.0) -> None:
    """acks=all, one small batch at a time, retried on whichever broker leads now."""
    deadline = time.monotonic() + timeout_s
    for first in range(0, len(values), 10):
        while True:
            try:
                produce(cluster, topic, 0, values[first : first + 10])
                break
            except (urllib.error.URLError, ConnectionError, KeyError, AssertionError, TimeoutError):
                assert time.monotonic() < deadline, "no leader accepted the records"
                time.sleep(0.3)


def test_leader_sigkill_during_a_streaming_query_loses_and_repeats_nothing(spark, failover_cluster, tmp_path: Path):
    cluster = failover_cluster
    topic = f"failover-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, partitions=1, replication_factor=3)
    before = [b"before-%04d" % i for i in range(300)]
    after = [b"after-%04d" % i for i in range(300)]
    produce(cluster, topic, 0, before, records_per_batch=10)
    output = tmp_path / "out"
    query = (
        spark.readStream.format("highwater")
        .option("servers", servers(cluster))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerTrigger", 100)
        .load()
        .writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    deadline = time.monotonic() + 90
    while not delivered(spark, output):
        assert time.monotonic() < deadline and query.isActive, "the query delivered nothing"
        time.sleep(0.5)
    old_leader = partitions(cluster, topic)[0]["leader_id"]
    cluster.brokers[old_leader].kill()
    produce_until_acked(cluster, topic, after)
    high_watermark = partitions(cluster, topic)[0]["high_watermark"]
    assert partitions(cluster, topic)[0]["leader_id"] != old_leader
    while len(delivered(spark, output)) < high_watermark:
        assert time.monotonic() < deadline + 60 and query.isActive, f"stalled at {len(delivered(spark, output))}"
        time.sleep(0.5)
    query.stop()
    rows = delivered(spark, output)
    assert_each_offset_once(rows, {0: range(high_watermark)})
    read_values = [value for _, _, value in rows]
    assert read_values[:300] == before
    assert set(after) <= set(read_values[300:])
