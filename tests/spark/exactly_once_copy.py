"""The streaming copy the exactly-once tests run: ``source`` into ``sink`` through the highwater sink."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

RECORDS_PER_TRIGGER = 40
"""Small: a killed copy is caught mid-run, with batches behind it and ahead of it."""


def start_copy(
    spark: SparkSession,
    servers: str,
    source: str,
    sink: str,
    checkpoint: str,
    *,
    available_now: bool,
    delivery_guarantee: str = "exactly_once",
    records_per_trigger: int = RECORDS_PER_TRIGGER,
) -> StreamingQuery:
    """Every record of ``source`` (``read_committed``) copied to the same partition of ``sink``."""
    writer = (
        spark.readStream.format("highwater")
        .option("servers", servers)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("isolationLevel", "read_committed")
        .option("maxRecordsPerTrigger", records_per_trigger)
        .load()
        .selectExpr("value", "partition")
        .writeStream.format("highwater")
        .option("servers", servers)
        .option("topic", sink)
        .option("deliveryGuarantee", delivery_guarantee)
        .option("checkpointLocation", checkpoint)
    )
    trigger = writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime="100 milliseconds")
    return trigger.start()
