"""A streaming query keeps every record exactly once while its partition leader is SIGKILLed.

The test kills a broker, so it runs on a cluster of its own, with the harness's short
session timeout: the controller notices the dead leader and elects a new one within seconds.
"""

from __future__ import annotations

import urllib.error
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.spark.cluster_ops import partitions, produce
from tests.spark.conftest import SPEC
from tests.spark.queries import assert_each_offset_once, delivered, servers
from tests.support.cluster import Cluster, cluster_fixture
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.chaos]

failover_cluster = cluster_fixture(SPEC)

DELIVERY_POLL_S = 0.5
"""Each look at the output is a Spark job: asked twice a second, not fifty times."""


def produce_until_acked(cluster: Cluster, topic: str, values: list[bytes], timeout_s: float = 60.0) -> None:
    """acks=all, one small batch at a time, retried on whichever broker leads now."""

    def acked(chunk: list[bytes]) -> Callable[[], bool]:
        def produced() -> bool:
            try:
                produce(cluster, topic, 0, chunk)
            except (urllib.error.URLError, ConnectionError, KeyError, AssertionError, TimeoutError):
                return False
            return True

        return produced

    for first in range(0, len(values), 10):
        wait_until(acked(values[first : first + 10]), f"a leader of {topic}-0 to accept records {first}..", timeout_s)


def test_leader_sigkill_during_a_streaming_query_loses_and_repeats_nothing(
    prefix: str, spark: SparkSession, failover_cluster: Cluster, tmp_path: Path
) -> None:
    cluster = failover_cluster
    topic = f"{prefix}-failover"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
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

    def delivered_while_active(count: int) -> bool:
        assert query.isActive, f"the query stopped: {query.exception()}"
        return len(delivered(spark, output)) >= count

    wait_until(lambda: delivered_while_active(1), "the query to deliver its first rows", 90, DELIVERY_POLL_S)
    old_leader = partitions(cluster, topic)[0]["leader_id"]
    cluster.brokers[old_leader].kill()
    produce_until_acked(cluster, topic, after)
    high_watermark = partitions(cluster, topic)[0]["high_watermark"]
    assert partitions(cluster, topic)[0]["leader_id"] != old_leader
    wait_until(
        lambda: delivered_while_active(high_watermark),
        f"the query to deliver all {high_watermark} records",
        120,
        DELIVERY_POLL_S,
    )
    query.stop()
    rows = delivered(spark, output)
    assert_each_offset_once(rows, {0: range(high_watermark)})
    read_values = [value for _, _, value in rows]
    assert read_values[:300] == before
    assert set(after) <= set(read_values[300:])
