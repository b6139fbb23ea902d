"""The reader's driver-side planning and executor-side reads, called directly against real brokers.

No Spark here: these are the exact calls Spark makes, in the order it makes them, so
rules that are hard to time inside a running query are checked deterministically.
"""

from __future__ import annotations

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from spark_connector import DataLossError, RangeTask
from spark_connector.fetch import read_range
from spark_connector.options import parse_source_options
from spark_connector.reader import HighwaterStreamReader
from tests.spark.cluster_ops import partitions, produce, wait_for_retention
from tests.spark.conftest import SPEC
from tests.spark.queries import servers
from tests.support.cluster import Cluster, cluster_fixture

pytestmark = [pytest.mark.integration]

cluster = cluster_fixture(SPEC, scope="module")
"""This module's own brokers: it runs with the suite's other tiers, not in the Spark phase of the session cluster."""


def stream_reader(cluster: Cluster, **options: str) -> HighwaterStreamReader:
    return HighwaterStreamReader(parse_source_options({"servers": servers(cluster), **options}, streaming=True))


def test_available_now_stops_at_the_snapshot_even_when_more_arrives(prefix: str, cluster: Cluster) -> None:
    topic = f"{prefix}-snapshot"
    cluster.create_topic(topic, partitions=2, replication_factor=2)
    produce(cluster, topic, 0, [b"x"] * 30)
    produce(cluster, topic, 1, [b"y"] * 5)
    reader = stream_reader(cluster, subscribe=topic, startingOffsets="earliest", maxRecordsPerTrigger="10")
    reader.prepareForTriggerAvailableNow()
    produce(cluster, topic, 0, [b"late"] * 20)
    start = reader.initialOffset()
    ends = []
    while (end := reader.latestOffset(start, reader.getDefaultReadLimit())) != start:
        ends.append(end)
        start = end
    assert ends == [
        {topic: {"0": 5, "1": 5}},
        {topic: {"0": 15, "1": 5}},
        {topic: {"0": 25, "1": 5}},
        {topic: {"0": 30, "1": 5}},
    ]
    assert reader.latestOffset(start, ReadAllAvailable()) == {topic: {"0": 30, "1": 5}}
    fresh = stream_reader(cluster, subscribe=topic)
    assert fresh.latestOffset(start, ReadMaxRows(1000)) == {topic: {"0": 50, "1": 5}}


def test_replayed_ranges_return_identical_records_and_large_ranges_are_split(prefix: str, cluster: Cluster) -> None:
    topic = f"{prefix}-split"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    produce(cluster, topic, 0, [b"v%d" % i for i in range(250)], records_per_batch=30)
    reader = stream_reader(
        cluster, subscribe=topic, startingOffsets="earliest", maxRecordsPerPartition="100", fetchMaxBytes="500"
    )
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    tasks = [task for task in reader.partitions(start, end) if isinstance(task, RangeTask)]
    assert [(task.start_offset, task.end_offset) for task in tasks] == [(0, 100), (100, 200), (200, 250)]
    first = [batch.to_pylist() for task in tasks for batch in reader.read(task)]
    replay = [batch.to_pylist() for task in tasks for batch in reader.read(task)]
    assert first == replay
    assert [row["offset"] for rows in first for row in rows] == list(range(250))


def test_a_read_below_the_log_start_fails_or_skips_to_it(prefix: str, cluster: Cluster) -> None:
    topic = f"{prefix}-gone"
    cluster.create_topic(
        topic, partitions=1, replication_factor=1, configs={"segment.bytes": "1024", "retention.bytes": "2048"}
    )
    produce(cluster, topic, 0, [b"r" * 50] * 200, records_per_batch=10)
    wait_for_retention(cluster, topic)
    cluster_id = cluster.cluster_id
    task = RangeTask(cluster_id, topic, 0, 0, 200, (cluster.url(),))
    with pytest.raises(DataLossError, match=f"data loss in {topic}-0: offset 0 is outside the log"):
        list(read_range(task))
    skipping = RangeTask(cluster_id, topic, 0, 0, 200, (cluster.url(),), fail_on_data_loss=False)
    offsets = [offset for batch in read_range(skipping) for offset in batch.column("offset").to_pylist()]
    log_start = partitions(cluster, topic)[0]["log_start_offset"]
    assert offsets and offsets[0] > 0 and offsets[0] <= log_start and offsets == list(range(offsets[0], 200))
