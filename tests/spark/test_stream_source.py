"""The streaming source against a real 3-broker cluster under Spark local[2]."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest
from pyspark import cloudpickle
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession

from tests.spark import failing_source
from tests.spark.cluster_ops import partitions, produce, wait_for_retention
from tests.spark.conftest import STEADY_SPEC
from tests.spark.queries import assert_each_offset_once, delivered, run_available_now, servers
from tests.support.cluster import Cluster, Clusters

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def values(prefix: str, count: int) -> list[bytes]:
    return [b"%s-%06d" % (prefix.encode(), index) for index in range(count)]


def wait_for_high_watermark(cluster: Cluster, topic: str, partition: int, expected: int) -> None:
    cluster.wait_until(
        lambda: cluster.partitions(topic)[partition].high_watermark == expected,
        f"{topic}-{partition}'s high watermark to reach {expected}",
    )


def test_a_query_reads_exactly_the_records_below_the_high_watermark(
    prefix: str, spark: SparkSession, clusters: Clusters, tmp_path: Path
) -> None:
    """Pauses a follower, so on a cluster of its own that keeps the paused follower in the ISR."""
    cluster = clusters.start(STEADY_SPEC)
    topic = f"{prefix}-hw"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    produce(cluster, topic, 0, values("committed", 100))
    wait_for_high_watermark(cluster, topic, 0, 100)
    state = partitions(cluster, topic)[0]
    follower = cluster.brokers[next(r for r in state["replica_ids"] if r != state["leader_id"])]
    options = {"servers": servers(cluster), "subscribe": topic, "startingOffsets": "earliest"}
    follower.pause()
    try:
        produce(cluster, topic, 0, values("uncommitted", 50), acks="1")
        state = partitions(cluster, topic)[0]
        assert (state["high_watermark"], state["log_end_offset"]) == (100, 150)
        progress = run_available_now(spark, options, tmp_path / "out", tmp_path / "checkpoint")
        assert progress[-1]["sources"][0]["endOffset"] == {topic: {"0": 100}}
        rows = delivered(spark, tmp_path / "out")
        assert_each_offset_once(rows, {0: range(100)})
        assert all(value.startswith(b"committed") for _, _, value in rows)
    finally:
        follower.resume()
    wait_for_high_watermark(cluster, topic, 0, 150)
    run_available_now(spark, options, tmp_path / "out", tmp_path / "checkpoint")
    rows = delivered(spark, tmp_path / "out")
    assert_each_offset_once(rows, {0: range(150)})
    assert [value for _, offset, value in rows if offset >= 100] == values("uncommitted", 50)


def test_available_now_with_a_limit_drains_in_fair_batches_and_stops(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    topic = f"{prefix}-drain"
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    counts = {0: 120, 1: 10, 2: 70}
    for partition, count in counts.items():
        produce(cluster, topic, partition, values(f"p{partition}", count), records_per_batch=25)
    options = {
        "servers": servers(cluster),
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxRecordsPerTrigger": 60,
    }
    progress = run_available_now(spark, options, tmp_path / "out", tmp_path / "checkpoint")
    assert [p["numInputRows"] for p in progress] == [60, 60, 60, 20]
    first_end = progress[0]["sources"][0]["endOffset"][topic]
    assert first_end == {"0": 25, "1": 10, "2": 25}
    assert_each_offset_once(delivered(spark, tmp_path / "out"), {p: range(c) for p, c in counts.items()})


def _trigger_every_200_ms(spark: SparkSession, options: dict[str, object], name: str, checkpoint: Path):
    reader = spark.readStream.format("highwater")
    for option, value in options.items():
        reader = reader.option(option, str(value))
    return (
        reader.load()
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def _batch_rows(query) -> list[int]:
    return [progress["numInputRows"] for progress in query.recentProgress if progress["numInputRows"] > 0]


@pytest.mark.parametrize("max_trigger_delay", ["10m", "1s"])
def test_min_offsets_per_trigger_waits_for_enough_records_or_for_the_max_trigger_delay(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path, max_trigger_delay: str
) -> None:
    """Spark's rule: the first batch of a run never waits; later ones wait for minOffsetsPerTrigger
    new records across the partitions, or for maxTriggerDelay since the last batch. Meanwhile the
    running query's lag shows in its group: what it processed, and what waits."""
    topic = f"{prefix}-min-{max_trigger_delay}"
    group = f"{topic}-query"
    cluster.create_topic(topic, partitions=2, replication_factor=1)
    produce(cluster, topic, 0, values("first", 3))
    options = {
        "kafka.bootstrap.servers": servers(cluster),
        "subscribe": topic,
        "startingOffsets": "earliest",
        "minOffsetsPerTrigger": 10,
        "maxTriggerDelay": max_trigger_delay,
        "kafka.group.id": group,
    }
    name = f"{prefix}_min_{max_trigger_delay}".replace("-", "_")
    query = _trigger_every_200_ms(spark, options, name, tmp_path / "checkpoint")
    try:
        cluster.wait_until(lambda: _batch_rows(query) == [3] or None, "the first batch, at once")
        produce(cluster, topic, 0, values("few", 4))
        if max_trigger_delay == "1s":
            cluster.wait_until(lambda: _batch_rows(query) == [3, 4] or None, "a batch once 1 s has passed")
            return
        query.awaitTermination(2)
        assert _batch_rows(query) == [3], "4 new records of 10 and 10 minutes to wait: no batch"
        lags = {0: (3, 4), 1: (0, 0)}
        cluster.wait_until(lambda: _group_lags(cluster, group) == lags or None, "the running query's lag")
        produce(cluster, topic, 1, values("enough", 6))
        cluster.wait_until(lambda: _batch_rows(query) == [3, 4 + 6] or None, "a batch once 10 are new")
    finally:
        query.stop()


def _group_lags(cluster: Cluster, group: str) -> dict[int, tuple[int, int]]:
    """(committed offset, lag) per partition, as ``highwater groups lag`` and the console read them."""
    status, answer = cluster.v3("GET", f"/consumer-groups/{group}/lags")
    assert status == 200, answer
    return {row["partition_id"]: (row["current_offset"], row["lag"]) for row in answer["data"]}


def _prometheus_lag(cluster: Cluster, group: str) -> dict[int, float]:
    """``highwater_consumer_group_lag`` of ``group`` per partition, from whichever broker coordinates it."""
    lags: dict[int, float] = {}
    for broker in cluster.brokers.values():
        with urllib.request.urlopen(f"{broker.url}/metrics", timeout=5) as response:
            for line in response.read().decode().splitlines():
                if line.startswith("highwater_consumer_group_lag{") and f'group="{group}"' in line:
                    partition = int(line.split('partition="', 1)[1].split('"', 1)[0])
                    lags[partition] = float(line.rsplit(" ", 1)[1])
    return lags


def _console_lag(cluster: Cluster, group: str) -> int | None:
    """The group's total lag in the newest sample of the console's lag-over-time chart."""
    status, answer = cluster.v3("GET", f"/consumer-groups/{group}/lag-history")
    assert status == 200, answer
    return answer["samples"][-1]["total_lag"] if answer["samples"] else None


def test_a_query_with_a_group_id_shows_its_lag_where_every_consumers_does(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    """Each planning commits what the query processed to its group; an availableNow run ends with the
    group at its last batch's end (which Spark's commit() never hears of), and the checkpoint, not
    the group, still decides where a restarted query resumes."""
    topic = f"{prefix}-lag"
    group = f"{prefix}-etl"
    cluster.create_topic(topic, partitions=2, replication_factor=1)
    produce(cluster, topic, 0, values("a", 30))
    produce(cluster, topic, 1, values("b", 20))
    options = {
        "kafka.bootstrap.servers": servers(cluster),
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": 20,
        "kafka.group.id": group,
    }
    progress = run_available_now(spark, options, tmp_path / "out", tmp_path / "checkpoint")
    assert [p["numInputRows"] for p in progress] == [20, 20, 10]
    assert _group_lags(cluster, group) == {0: (30, 0), 1: (20, 0)}
    produce(cluster, topic, 0, values("c", 5))
    assert _group_lags(cluster, group) == {0: (30, 5), 1: (20, 0)}
    described = cluster.cli(["groups", "describe", group])
    assert re.search(r"^\S+\s+0\s+30\s+35\s+5\s", described, re.MULTILINE), described
    cluster.wait_until(
        lambda: _prometheus_lag(cluster, group) == {0: 5.0, 1: 0.0} or None, "the coordinator's lag gauges"
    )
    cluster.wait_until(lambda: _console_lag(cluster, group) == 5 or None, "the console's lag over time")
    run_available_now(spark, options, tmp_path / "out", tmp_path / "checkpoint")
    assert _group_lags(cluster, group) == {0: (35, 0), 1: (20, 0)}
    assert_each_offset_once(delivered(spark, tmp_path / "out"), {0: range(35), 1: range(20)})


def test_restart_from_checkpoint_and_a_failure_in_read_lose_and_repeat_nothing(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    topic = f"{prefix}-replay"
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    for partition in (0, 1):
        produce(cluster, topic, partition, values(f"first{partition}", 300), records_per_batch=20)
    cloudpickle.register_pickle_by_value(failing_source)
    spark.dataSource.register(failing_source.FailingOnceSource)
    options = {
        "servers": servers(cluster),
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxRecordsPerTrigger": 200,
        "fetchMaxBytes": 1024,
        failing_source.MARKER_OPTION: str(tmp_path / "failed-once"),
    }
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    with pytest.raises(StreamingQueryException, match="injected failure in read"):
        run_available_now(spark, options, output, checkpoint, source_format="highwater_failing_once")
    assert (tmp_path / "failed-once").exists()
    assert delivered(spark, output) == []
    for partition in (0, 1):
        produce(cluster, topic, partition, values(f"second{partition}", 100), records_per_batch=20)
    run_available_now(spark, options, output, checkpoint, source_format="highwater_failing_once")
    rows = delivered(spark, output)
    assert_each_offset_once(rows, {0: range(400), 1: range(400)})
    expected = {(p, o): v for p in (0, 1) for o, v in enumerate(values(f"first{p}", 300) + values(f"second{p}", 100))}
    assert all(expected[(p, o)] == v for p, o, v in rows)


def test_a_streaming_query_picks_up_new_topics_of_its_pattern_from_earliest(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    cluster.create_topic(f"{prefix}-a", partitions=1, replication_factor=1)
    produce(cluster, f"{prefix}-a", 0, values("a", 5))
    options = {"servers": servers(cluster), "subscribePattern": f"{prefix}-.*", "startingOffsets": "latest"}
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_available_now(spark, options, output, checkpoint)
    assert delivered(spark, output) == []
    produce(cluster, f"{prefix}-a", 0, values("a-late", 3))
    cluster.create_topic(f"{prefix}-b", partitions=2, replication_factor=1)
    produce(cluster, f"{prefix}-b", 1, values("b", 4))
    run_available_now(spark, options, output, checkpoint)
    rows = spark.read.schema("topic string, partition int, offset long").parquet(str(output)).collect()
    assert sorted((r.topic, r.partition, r.offset) for r in rows) == (
        [(f"{prefix}-a", 0, offset) for offset in range(5, 8)] + [(f"{prefix}-b", 1, offset) for offset in range(4)]
    )


def test_unknown_and_malformed_options_fail_at_load_naming_the_option(spark: SparkSession, cluster: Cluster) -> None:
    with pytest.raises(Exception, match="unknown option 'maxoffsetpertrigger'; did you mean 'maxOffsetsPerTrigger'"):
        (
            spark.readStream.format("highwater")
            .option("servers", servers(cluster))
            .option("subscribe", "t")
            .option("maxOffsetPerTrigger", "5")
            .load()
        )
    with pytest.raises(Exception, match="startingOffsets"):
        (
            spark.readStream.format("highwater")
            .option("servers", servers(cluster))
            .option("subscribe", "t")
            .option("startingOffsets", "{not json")
            .load()
        )


def test_data_loss_fails_clearly_or_skips_ahead_when_allowed(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    topic = f"{prefix}-retention"
    cluster.create_topic(
        topic, partitions=1, replication_factor=1, configs={"segment.bytes": "1024", "retention.bytes": "2048"}
    )
    produce(cluster, topic, 0, values("r", 200), records_per_batch=10)
    log_start = wait_for_retention(cluster, topic)
    options = {"servers": servers(cluster), "subscribe": topic, "startingOffsets": f'{{"{topic}": {{"0": 0}}}}'}
    expected_failure = r"data loss in .*query's next offset 0 is below the log start offset"
    with pytest.raises(StreamingQueryException, match=expected_failure):
        run_available_now(spark, options, tmp_path / "out", tmp_path / "checkpoint")
    log_start = partitions(cluster, topic)[0]["log_start_offset"]
    skipping = {**options, "failOnDataLoss": "false"}
    run_available_now(spark, skipping, tmp_path / "out2", tmp_path / "checkpoint2")
    offsets = [offset for _, offset, _ in delivered(spark, tmp_path / "out2")]
    assert offsets[-1] == 199 and offsets == list(range(offsets[0], 200)) and offsets[0] >= log_start > 0
