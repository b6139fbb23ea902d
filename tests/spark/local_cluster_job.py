"""A job run under ``local-cluster[2,1,1024]``: executors are separate JVMs with their own Python workers.

Run by ``test_local_cluster.py`` in a child process (one SparkContext per process, and
the suite's own session is ``local[2]``). The connector is shipped to the executors
by value, as a user's job would ship it without installing it on the workers.
Prints one JSON line: the offsets the streaming query delivered and the batch count.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark import cloudpickle
from pyspark.sql import SparkSession

import spark_connector
from spark_connector import register


def main(servers: str, topic: str, work_dir: Path, log4j_file: str) -> None:
    cloudpickle.register_pickle_by_value(spark_connector)
    java_options = f"-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile=file:{log4j_file}"
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName("highwater-local-cluster")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.executor.extraJavaOptions", java_options)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    query = (
        spark.readStream.format("highwater")
        .option("servers", servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxRecordsPerTrigger", 150)
        .load()
        .writeStream.format("parquet")
        .option("path", str(work_dir / "out"))
        .option("checkpointLocation", str(work_dir / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    rows = spark.read.schema("partition int, offset long").parquet(str(work_dir / "out")).collect()
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    print(
        json.dumps(
            {
                "offsets": sorted([row.partition, row.offset] for row in rows),
                "batches": sum(1 for progress in query.recentProgress if progress.numInputRows > 0),
                "executors": executors,
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4])
