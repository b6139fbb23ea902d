"""A streaming copy through the exactly-once sink, in a process of its own so a test can SIGKILL it mid-batch.

Run by ``test_exactly_once_sink.py``: ``local[2]``, ``maxRecordsPerTrigger`` small so the
copy takes many micro-batches, a processing-time trigger so it never stops by itself.
Prints ``started`` once the query runs.
"""

from __future__ import annotations

import os
import sys

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from spark_connector import register
from tests.spark.conftest import session_builder
from tests.spark.exactly_once_copy import start_copy


def main(servers: str, source: str, sink: str, checkpoint: str) -> None:
    spark = session_builder("local[2]").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    query = start_copy(spark, servers, source, sink, checkpoint, available_now=False)
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:5])
