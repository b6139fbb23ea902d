"""A batch read with ``isolationLevel`` (or Spark's ``kafka.isolation.level``) ``read_committed``.

Transactions written by librdkafka: one committed, one aborted, one left open. A
``read_committed`` read returns the committed records and stops at the open
transaction; the default read returns every record below the high watermark.
"""

from __future__ import annotations

from confluent_kafka import Producer
from pyspark.sql import SparkSession

from tests.spark.queries import servers
from tests.support.cluster import Cluster


def test_read_committed_reads_committed_records_and_stops_at_the_open_transaction(
    prefix: str, spark: SparkSession, cluster: Cluster
) -> None:
    topic = f"{prefix}-committed"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    writer = Producer({"bootstrap.servers": cluster.bootstrap(), "transactional.id": f"{topic}-writer"})
    writer.init_transactions(30)
    for outcome, values in (("commit", [b"c0", b"c1"]), ("abort", [b"a0"]), ("commit", [b"c2"]), ("open", [b"o0"])):
        writer.begin_transaction()
        for value in values:
            writer.produce(topic, value, partition=0)
        writer.flush(30)
        if outcome == "commit":
            writer.commit_transaction(30)
        elif outcome == "abort":
            writer.abort_transaction(30)
    try:

        def read(**isolation: str) -> list[bytes]:
            reader = spark.read.format("highwater").option("servers", servers(cluster)).option("subscribe", topic)
            for name, value in isolation.items():
                reader = reader.option(name, value)
            rows = sorted(reader.load().collect(), key=lambda row: row.offset)
            return [bytes(row.value) for row in rows]

        assert read(isolationLevel="read_committed") == [b"c0", b"c1", b"c2"]
        assert read(**{"kafka.isolation.level": "read_committed"}) == [b"c0", b"c1", b"c2"]
        assert read() == [b"c0", b"c1", b"a0", b"c2", b"o0"]
    finally:
        writer.abort_transaction(30)
