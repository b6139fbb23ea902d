"""The exactly-once copy in a process of its own, so a test can SIGKILL it mid-batch (driver, executors and
Python workers at once) and restart it from its checkpoint.

Run by ``test_exactly_once_sink.py`` as ``python -m tests.spark.exactly_once_job MODE SERVERS SOURCE SINK
CHECKPOINT``: ``follow`` copies batch after batch until killed; ``drain`` copies what is there
(``availableNow``) and prints the number of source records it read as its last line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from spark_connector import register
from tests.spark.conftest import JAVA_OPTIONS, session_builder
from tests.spark.exactly_once_copy import start_copy


def main(mode: str, servers: str, source: str, sink: str, checkpoint: str) -> None:
    # the JVM's scratch space beside the checkpoint: a SIGKILLed run cannot remove it, the test's tmp_path goes
    local_dir = Path(checkpoint).parent / "spark-local"
    local_dir.mkdir(parents=True, exist_ok=True)
    spark = (
        session_builder("local[2]")
        .config("spark.local.dir", str(local_dir))
        .config("spark.driver.extraJavaOptions", f"{JAVA_OPTIONS} -Djava.io.tmpdir={local_dir}")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    query = start_copy(spark, servers, source, sink, checkpoint, available_now=mode == "drain")
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"the copy failed: {query.exception()}")
    print(sum(progress["numInputRows"] for progress in query.recentProgress), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:6])
