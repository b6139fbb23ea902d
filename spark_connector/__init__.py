"""Spark Structured Streaming source and sink for highwater (PySpark's Python Data Source API).

    from spark_connector import register
    register(spark)
    df = (
        spark.readStream.format("highwater")
        .option("kafka.bootstrap.servers", "broker-1:9092")  # the HTTP listeners; Spark's option names
        .option("subscribe", "orders")
        .load()
    )

Every micro-batch ends at the per-partition high watermark read at planning time, so
Spark never reads a record that a leader failover could take back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spark_connector.fetch import DataLossError, RangeTask
from spark_connector.options import OptionError
from spark_connector.source import HighwaterDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DataLossError", "HighwaterDataSource", "OptionError", "RangeTask", "register"]


def register(spark: SparkSession) -> None:
    """Register the ``highwater`` format on ``spark``."""
    spark.dataSource.register(HighwaterDataSource)
