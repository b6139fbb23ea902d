"""The exactly-once sink, checked record by record: a streaming copy of two partitions into two.

* A query SIGKILLed mid-run (driver, executors and Python workers at once, in a process
  of its own) and restarted from its checkpoint leaves every source record exactly once
  in the sink, in order, for ``read_committed`` readers: what the killed run left open
  is aborted by the restart's new incarnations, what it committed is not written again.
* A batch whose transactions were committed but which is missing from Spark's commit log
  (the driver died in between: the test deletes the entry) is replayed by Spark and
  written nothing; the at-least-once sink, given the same replay, writes it twice (so
  the check can fail).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from consumer import Consumer, TopicPartition
from tests.spark.cluster_ops import partitions, produce
from tests.spark.exactly_once_copy import start_copy
from tests.spark.queries import servers
from tests.support.brokers import REPO_ROOT
from tests.support.cluster import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]

PER_PARTITION = 100
REPLAY_RECORDS_PER_TRIGGER = 120
"""Two batches per copy in the replay test: it needs a last batch, not many."""


def topics(cluster: Cluster, prefix: str, name: str) -> tuple[str, str, dict[int, list[bytes]]]:
    """A source with ``PER_PARTITION`` records in each of two partitions, an empty sink, the source's values."""
    source, sink = f"{prefix}-{name}-in", f"{prefix}-{name}-out"
    for topic in (source, sink):
        cluster.create_topic(topic, partitions=2, replication_factor=3, configs={"min.insync.replicas": 2})
    values = {p: [b"%d-%d" % (p, i) for i in range(PER_PARTITION)] for p in (0, 1)}
    for partition, partition_values in values.items():
        produce(cluster, source, partition, partition_values, records_per_batch=50)
    return source, sink, values


def committed_values(cluster: Cluster, topic: str) -> dict[int, list[bytes]]:
    """Every value a ``read_committed`` reader reads, per partition in offset order, once no transaction is open."""
    ends = cluster.wait_stable(topic)
    return asyncio.run(_read(cluster, topic, ends))


async def _read(cluster: Cluster, topic: str, ends: list[int]) -> dict[int, list[bytes]]:
    tps = [TopicPartition(topic, p) for p in range(len(ends))]
    values: dict[int, list[bytes]] = {p: [] for p in range(len(ends))}
    consumer = Consumer(cluster.url(), isolation_level="read_committed", auto_offset_reset="earliest")
    async with consumer:
        consumer.assign(tps)
        async with asyncio.timeout(30):
            while any([await consumer.position(tp) < end for tp, end in zip(tps, ends)]):
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    values[tp.partition].extend(record.value or b"" for record in records)
    return values


def finish(query: StreamingQuery) -> int:
    """Wait for an availableNow run; the source records it read."""
    assert query.awaitTermination(180), "the query did not finish in 180 s"
    assert query.exception() is None, str(query.exception())
    return sum(progress["numInputRows"] for progress in query.recentProgress)


def copy_job(cluster: Cluster, mode: str, source: str, sink: str, checkpoint: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.spark.exactly_once_job", mode, servers(cluster), source, sink, str(checkpoint)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_a_query_killed_mid_run_and_restarted_copies_every_record_once(
    prefix: str, cluster: Cluster, tmp_path: Path
) -> None:
    """Both runs in processes of their own: off the suite's Spark session, so beside its tests."""
    source, sink, values = topics(cluster, prefix, "killed")
    checkpoint = tmp_path / "checkpoint"
    job = copy_job(cluster, "follow", source, sink, checkpoint)
    try:

        def copying() -> bool:
            if job.poll() is not None:
                _, errors = job.communicate()
                raise AssertionError(f"the copy exited with {job.returncode}: {errors[-3000:]}")
            return sum(p["log_end_offset"] for p in partitions(cluster, sink)) >= PER_PARTITION // 2

        cluster.wait_until(copying, "the first query to have written a few batches", 180)
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        job.communicate()
    open_after_kill = [p["high_watermark"] - p["last_stable_offset"] for p in partitions(cluster, sink)]
    print(f"\nrecords of open transactions after the kill, per partition: {open_after_kill}")
    restarted = copy_job(cluster, "drain", source, sink, checkpoint)
    output, errors = restarted.communicate(timeout=240)
    assert restarted.returncode == 0, errors[-3000:]
    assert int(output.split()[-1]) > 0, "the killed query had copied everything already: the kill proved nothing"
    assert committed_values(cluster, sink) == values


def test_a_replayed_batch_already_committed_is_not_written_again(
    prefix: str, spark: SparkSession, cluster: Cluster, tmp_path: Path
) -> None:
    for guarantee in ("exactly_once", "at_least_once"):
        source, sink, values = topics(cluster, prefix, guarantee.replace("_", "-"))
        checkpoint = tmp_path / guarantee

        def run(
            source: str = source, sink: str = sink, checkpoint: Path = checkpoint, guarantee: str = guarantee
        ) -> int:
            query = start_copy(
                spark,
                servers(cluster),
                source,
                sink,
                str(checkpoint),
                available_now=True,
                delivery_guarantee=guarantee,
                records_per_trigger=REPLAY_RECORDS_PER_TRIGGER,
            )
            return finish(query)

        assert run() == 2 * PER_PARTITION
        assert committed_values(cluster, sink) == values
        commits = checkpoint / "commits"
        last = max((path for path in commits.iterdir() if path.name.isdigit()), key=lambda path: int(path.name))
        last.unlink()
        (commits / f".{last.name}.crc").unlink(missing_ok=True)
        replayed = run()
        assert replayed > 0, "Spark did not replay the batch missing from its commit log"
        found = committed_values(cluster, sink)
        if guarantee == "exactly_once":
            assert found == values
        else:
            duplicates = sum(len(found[p]) - len(set(found[p])) for p in found)
            assert duplicates == replayed, "the at-least-once sink was expected to write the replayed batch again"
