"""Batch reads with starting/ending offsets, and the batch and streaming sinks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from tests.spark.cluster_ops import produce
from tests.spark.queries import delivered, run_available_now, servers
from tests.support.cluster import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_batch_read_between_starting_and_ending_offsets_with_headers(
    prefix: str, spark: SparkSession, cluster: Cluster
) -> None:
    topic = f"{prefix}-batch"
    cluster.create_topic(topic, partitions=2, replication_factor=2)
    produce(
        cluster,
        topic,
        0,
        [b"a%d" % i for i in range(30)],
        keys=[b"k%d" % i for i in range(30)],
        headers=[("source", b"test")],
    )
    produce(cluster, topic, 1, [b"b%d" % i for i in range(10)])
    df = (
        spark.read.format("highwater")
        .option("kafka.bootstrap.servers", servers(cluster).replace("http://", ""))
        .option("subscribe", topic)
        .option("startingOffsets", f'{{"{topic}": {{"0": 5, "1": -2}}}}')
        .option("endingOffsets", f'{{"{topic}": {{"0": 12, "1": -1}}}}')
        .option("includeHeaders", "true")
        .option("minPartitions", 4)
        .load()
    )
    assert df.rdd.getNumPartitions() == 4, "7 and 10 offsets spread over 2 tasks each (Spark's minPartitions)"
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
        "headers",
    ]
    rows = sorted(df.collect(), key=lambda row: (row.partition, row.offset))
    assert [(row.partition, row.offset) for row in rows] == [(0, o) for o in range(5, 12)] + [(1, o) for o in range(10)]
    assert bytes(rows[0].key) == b"k5" and bytes(rows[0].value) == b"a5"
    assert [(h.key, bytes(h.value)) for h in rows[0].headers] == [("source", b"test")]
    assert rows[-1].headers == []


def test_batch_write_then_stream_copy_through_the_streaming_sink(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    source, copy = f"{prefix}-sink-in", f"{prefix}-sink-out"
    cluster.create_topic(source, partitions=2, replication_factor=3)
    cluster.create_topic(copy, partitions=2, replication_factor=3)
    rows = [(b"key-%d" % i, b"value-%d" % i, i % 2) for i in range(200)]
    (
        spark.createDataFrame(rows, "key binary, value binary, partition int")
        .write.format("highwater")
        .option("servers", servers(cluster))
        .option("topic", source)
        .mode("append")
        .save()
    )
    assert sum(cluster.wait_stable(source)) > 200, "no transaction marker: the write was not transactional"

    query = (
        spark.readStream.format("highwater")
        .option("servers", servers(cluster))
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("key", "value", "partition")
        .writeStream.format("highwater")
        .option("servers", servers(cluster))
        .option("topic", copy)
        .option("checkpointLocation", str(tmp_path / "copy-checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    options = {"servers": servers(cluster), "subscribe": copy, "startingOffsets": "earliest"}
    run_available_now(spark, options, tmp_path / "out", tmp_path / "checkpoint")
    copied = delivered(spark, tmp_path / "out")
    assert sorted(value for _, _, value in copied) == sorted(value for _, value, _ in rows)
    assert all(int(value.split(b"-")[1]) % 2 == partition for partition, _, value in copied)


def test_the_sink_needs_a_value_column_and_a_topic(spark: SparkSession, cluster: Cluster) -> None:
    frame = spark.createDataFrame([(b"v",)], "value binary")
    with pytest.raises(Exception, match="option 'topic' is required"):
        frame.write.format("highwater").option("servers", servers(cluster)).mode("append").save()
    with pytest.raises(Exception, match="'value' column"):
        (
            spark.createDataFrame([(b"k",)], "key binary")
            .write.format("highwater")
            .option("servers", servers(cluster))
            .option("topic", "t")
            .mode("append")
            .save()
        )


def test_assign_reads_only_the_assigned_partitions(prefix: str, spark: SparkSession, cluster: Cluster) -> None:
    topic = f"{prefix}-assign"
    cluster.create_topic(topic, partitions=3, replication_factor=1)
    for partition in range(3):
        produce(cluster, topic, partition, [b"p%d-%d" % (partition, i) for i in range(5)])
    df = (
        spark.read.format("highwater")
        .option("servers", servers(cluster))
        .option("assign", f'{{"{topic}": [0, 2]}}')
        .load()
    )
    rows = sorted((row.partition, row.offset, bytes(row.value)) for row in df.collect())
    assert rows == [(p, i, b"p%d-%d" % (p, i)) for p in (0, 2) for i in range(5)]


def test_the_sink_takes_topic_and_headers_from_each_row(prefix: str, spark: SparkSession, cluster: Cluster) -> None:
    first, second = f"{prefix}-rows-a", f"{prefix}-rows-b"
    cluster.create_topic(first, partitions=1, replication_factor=1)
    cluster.create_topic(second, partitions=1, replication_factor=1)
    rows = [(first, b"one", [("trace", b"t1")]), (second, b"two", [("trace", b"t2"), ("empty", None)])]
    (
        spark.createDataFrame(rows, "topic string, value binary, headers array<struct<key:string,value:binary>>")
        .write.format("highwater")
        .option("servers", servers(cluster))
        .mode("append")
        .save()
    )
    read = {}
    for topic in (first, second):
        [row] = (
            spark.read.format("highwater")
            .option("servers", servers(cluster))
            .option("subscribe", topic)
            .option("includeHeaders", "true")
            .load()
            .collect()
        )
        read[topic] = (bytes(row.value), [(h.key, None if h.value is None else bytes(h.value)) for h in row.headers])
    assert read == {first: (b"one", [("trace", b"t1")]), second: (b"two", [("trace", b"t2"), ("empty", None)])}


def test_a_batch_read_by_time_starts_at_the_first_record_that_late(
    prefix: str, spark: SparkSession, cluster: Cluster
) -> None:
    """Spark's ``startingTimestamp`` through ListOffsets by time; past every record it fails, or starts at
    the end with ``startingOffsetsByTimestampStrategy=latest``."""
    topic = f"{prefix}-by-time"
    cluster.create_topic(topic, partitions=1, replication_factor=2)
    produce(cluster, topic, 0, [b"early%d" % i for i in range(5)])
    time.sleep(0.05)
    middle_ms = int(time.time() * 1000)
    time.sleep(0.05)
    produce(cluster, topic, 0, [b"late%d" % i for i in range(5)])

    def read(**options: object) -> list[int]:
        reader = spark.read.format("highwater").option("kafka.bootstrap.servers", servers(cluster))
        for name, value in {"subscribe": topic, **options}.items():
            reader = reader.option(name, str(value))
        return sorted(row.offset for row in reader.load().collect())

    assert read(startingTimestamp=middle_ms) == [5, 6, 7, 8, 9]
    assert read(startingTimestamp=0, endingTimestamp=middle_ms) == [0, 1, 2, 3, 4]
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy=latest"):
        read(startingTimestamp=middle_ms + 3_600_000)
    assert read(startingTimestamp=middle_ms + 3_600_000, startingOffsetsByTimestampStrategy="latest") == []
