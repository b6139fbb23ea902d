"""Running ``highwater`` queries the way a user would: availableNow into Parquet, then reading it back.

Parquet with a checkpoint is Spark's exactly-once sink (only committed files are
visible), so whatever the tests find in the output is what the query delivered.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from tests.support.cluster import Cluster


def servers(cluster: Cluster) -> str:
    return ",".join(broker.url for broker in cluster.brokers.values())


def run_available_now(
    spark: SparkSession,
    options: dict[str, Any],
    output: Path,
    checkpoint: Path,
    *,
    source_format: str = "highwater",
    timeout_s: float = 120.0,
) -> list[dict]:
    """One availableNow run from ``checkpoint`` into Parquet at ``output``; the run's progress reports."""
    reader = spark.readStream.format(source_format)
    for name, value in options.items():
        reader = reader.option(name, str(value))
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    finished = query.awaitTermination(int(timeout_s))
    assert finished, f"query did not finish in {timeout_s} s"
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    reports = [json.loads(progress.json) for progress in query.recentProgress]
    for report in reports:
        for source in report["sources"]:
            for name in ("startOffset", "endOffset", "latestOffset"):
                if isinstance(source.get(name), str):
                    source[name] = json.loads(source[name])
    return [report for report in reports if report["numInputRows"] > 0]


def delivered(spark: SparkSession, output: Path) -> list[tuple[int, int, bytes]]:
    """``(partition, offset, value)`` of every row the sink committed, sorted."""
    if not (output / "_spark_metadata").exists():
        return []
    rows = spark.read.schema("partition int, offset long, value binary").parquet(str(output)).collect()
    return sorted((row.partition, row.offset, bytes(row.value)) for row in rows)


def assert_each_offset_once(rows: list[tuple[int, int, bytes]], expected: dict[int, range]) -> None:
    """Every expected (partition, offset) exactly once and nothing else."""
    counts = Counter((partition, offset) for partition, offset, _ in rows)
    duplicates = sorted(key for key, count in counts.items() if count > 1)
    assert not duplicates, f"read twice: {duplicates[:10]}"
    wanted = {(partition, offset) for partition, offsets in expected.items() for offset in offsets}
    assert set(counts) == wanted, (
        f"missing {sorted(wanted - set(counts))[:10]}, unexpected {sorted(set(counts) - wanted)[:10]}"
    )
