"""Rows/s of the ``highwater`` Spark source next to the ceiling of any Python data source.

Run ``python -m broker.bench.spark`` (needs the ``spark`` extra and Java 17). It starts
a one-broker cluster in a temporary directory (or uses ``--server``), writes
``--records`` records of ``--value-bytes``-byte values to a fresh topic of
``--partitions`` partitions (binary batches, acks=1), then, in one ``local[2]``
SparkSession, runs two ``trigger(availableNow=True)`` queries into Spark's ``noop``
sink, in ``--rounds`` interleaved rounds, and reports rows/s of each and the median of
the rounds' ratios:

- ``highwater``: the real source: HTTP fetches from the leader, batch decoding, Arrow;
- ``memory-arrow``: a Python data source whose ``read()`` yields the same rows (same
  columns, types, task count and Arrow batch size) built in memory: what Spark's
  Python data source machinery itself costs on this machine, the ceiling for any
  Python source.

Each query runs once unmeasured on a small range first, so JVM and worker start-up
are not counted. Figures depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import structlog

from broker.bench.clients import _broker
from broker.record.codec import encode_batch

BATCH_CONTENT_TYPE = "application/vnd.kafka.batch.v2"
RECORDS_PER_PRODUCE = 5_000
ARROW_ROWS_PER_BATCH = 70_000
"""About what one 8 MiB fetch of 100-byte values decodes to, so both sources yield alike."""


def _post_json(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())


def _get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as reply:
        return json.loads(reply.read())


def fill_topic(url: str, records: int, partitions: int, value_bytes: int) -> str:
    """A fresh topic holding ``records`` records spread evenly over its partitions."""
    cluster_id = _get_json(f"{url}/v3/clusters")["data"][0]["cluster_id"]
    topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
    _post_json(
        f"{url}/v3/clusters/{cluster_id}/topics",
        {"topic_name": topic, "partitions_count": partitions, "replication_factor": 1},
    )
    value = b"v" * value_bytes
    batch = encode_batch([(None, value)] * RECORDS_PER_PRODUCE)
    for partition in range(partitions):
        path = f"{url}/v3/clusters/{cluster_id}/topics/{topic}/partitions/{partition}/batches?acks=1"
        for first in range(0, records // partitions, RECORDS_PER_PRODUCE):
            count = min(RECORDS_PER_PRODUCE, records // partitions - first)
            body = batch if count == RECORDS_PER_PRODUCE else encode_batch([(None, value)] * count)
            request = urllib.request.Request(
                path, data=body, method="POST", headers={"Content-Type": BATCH_CONTENT_TYPE}
            )
            urllib.request.urlopen(request, timeout=60).read()
    return topic


def memory_source_class():
    """The in-memory Arrow source (defined lazily: pyspark is an optional dependency)."""
    import numpy as np
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

    from spark_connector.arrow import arrow_schema, schema_ddl

    @dataclass(frozen=True)
    class RowRange(InputPartition):
        partition: int
        start: int
        end: int
        value_bytes: int

    class MemoryArrowReader(DataSourceStreamReader):
        def __init__(self, options: Mapping[str, str]) -> None:
            self.rows = int(options["rows"])
            self.partitions_count = int(options["partitions"])
            self.value_bytes = int(options["valueBytes"])
            self.split_rows = int(options["splitRows"])

        def initialOffset(self) -> dict:
            return {"row": 0}

        # The zero-argument form from before Spark 4.2, which Spark still calls (without admission control).
        def latestOffset(self) -> dict:  # type: ignore[override]
            return {"row": self.rows}

        def partitions(self, start: dict, end: dict) -> list[RowRange]:
            per_partition = (end["row"] - start["row"]) // self.partitions_count
            return [
                RowRange(partition, first, min(first + self.split_rows, per_partition), self.value_bytes)
                for partition in range(self.partitions_count)
                for first in range(0, per_partition, self.split_rows)
            ]

        def read(self, task: InputPartition) -> Iterator[pa.RecordBatch]:
            assert isinstance(task, RowRange)
            schema = arrow_schema(include_headers=False)
            now_us = int(time.time() * 1_000_000)
            for first in range(task.start, task.end, ARROW_ROWS_PER_BATCH):
                count = min(ARROW_ROWS_PER_BATCH, task.end - first)
                values = [b"v" * task.value_bytes] * count
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.nulls(count, pa.binary()),
                        pa.array(values, pa.binary()),
                        pa.array(["bench"] * count, pa.string()),
                        pa.array(np.full(count, task.partition, dtype=np.int32)),
                        pa.array(np.arange(first, first + count, dtype=np.int64)),
                        pa.array(np.full(count, now_us, dtype=np.int64)).cast(schema.field("timestamp").type),
                        pa.array(np.zeros(count, dtype=np.int32)),
                    ],
                    schema=schema,
                )

    class MemoryArrowSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "memory_arrow"

        def schema(self) -> str:
            return schema_ddl(include_headers=False)

        def streamReader(self, schema) -> MemoryArrowReader:
            return MemoryArrowReader(self.options)

    return MemoryArrowSource


def spark_session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from spark_connector import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("highwater-bench-spark")
        .config("spark.driver.memory", "2g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    session.dataSource.register(memory_source_class())
    return session


def time_query(spark, source_format: str, options: dict[str, str]) -> tuple[float, int]:
    """Seconds and rows of one availableNow query into the ``noop`` sink."""
    reader = spark.readStream.format(source_format)
    for name, value in options.items():
        reader = reader.option(name, value)
    started = time.perf_counter()
    query = reader.load().writeStream.format("noop").trigger(availableNow=True).start()
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    rows = sum(progress.numInputRows for progress in query.recentProgress)
    return seconds, rows


def run(url: str, records: int, partitions: int, value_bytes: int, split_rows: int, rounds: int) -> None:
    """``rounds`` interleaved rounds, each timing the two sources one after the other; the verdict
    is the median of the rounds' ratios (a ratio within a round shares the machine's state)."""
    warmup_topic = fill_topic(url, 20_000, partitions, value_bytes)
    topic = fill_topic(url, records, partitions, value_bytes)
    spark = spark_session()
    highwater = {"servers": url, "startingOffsets": "earliest", "maxRecordsPerPartition": str(split_rows)}
    memory = {"partitions": str(partitions), "valueBytes": str(value_bytes), "splitRows": str(split_rows)}
    time_query(spark, "highwater", {**highwater, "subscribe": warmup_topic})
    time_query(spark, "memory_arrow", {**memory, "rows": "20000"})
    print(f"{records:,} records of {value_bytes}-byte values, {partitions} partitions, local[2], availableNow -> noop")
    print(f"{'round':<6} {'source':<16} {'seconds':>8} {'rows':>10} {'rows/s':>12}")
    ratios = []
    for round_number in range(1, rounds + 1):
        rates = {}
        for name, source_format, options in (
            ("highwater", "highwater", {**highwater, "subscribe": topic}),
            ("memory-arrow", "memory_arrow", {**memory, "rows": str(records)}),
        ):
            seconds, rows = time_query(spark, source_format, options)
            rates[name] = rows / seconds
            print(f"{round_number:<6} {name:<16} {seconds:>8.2f} {rows:>10,} {rows / seconds:>12,.0f}")
        ratios.append(rates["highwater"] / rates["memory-arrow"])
    shown = ", ".join(f"{ratio:.0%}" for ratio in ratios)
    print(f"highwater reaches {statistics.median(ratios):.0%} of the in-memory ceiling (median of rounds: {shown})")
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", help="URL of a running broker; default: start one")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--split-rows", type=int, default=250_000, help="maxRecordsPerPartition of the source")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the two sources")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with _broker(args.server) as url:
        run(url, args.records, args.partitions, args.value_bytes, args.split_rows, args.rounds)


if __name__ == "__main__":
    main()
