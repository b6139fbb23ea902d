"""One quiet, fast SparkSession for the whole Spark suite, and the brokers it reads from.

The brokers are one harness cluster for the whole session (``SPEC``): no test here
breaks a broker of it, each names its topics after itself (the ``prefix`` fixture).
A test that pauses or kills a broker starts its own cluster.

The interpreter running the tests is also the workers' interpreter (``PYSPARK_PYTHON``),
so executors import the same ``spark_connector``, ``pyarrow`` and ``broker`` packages.
Settings follow what keeps a local session cheap: two cores, two shuffle partitions,
no UI, serial GC and C1 only in the driver JVM, Spark's logs at ERROR.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.sql import SparkSession

from spark_connector import register
from tests.support.cluster import STEADY_SETTINGS, ClusterSpec, cluster_fixture

LOG4J2_FILE = Path(__file__).with_name("log4j2.properties")
JAVA_OPTIONS = f"-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile=file:{LOG4J2_FILE}"

SPEC = ClusterSpec(
    brokers=3, kafka=True, settings={"log_retention_check_interval_ms": 200, "console.lag_sample_interval_ms": 200}
)
"""Retention runs often enough for the data-loss tests, and the console samples a query's lag often
enough for the lag test; Kafka listeners for the transactional writers."""

STEADY_SPEC = SPEC.with_settings(
    **{**STEADY_SETTINGS, "replica_lag_time_max_ms": 120_000, "broker_session_timeout_ms": 120_000}
)
"""A follower paused by a test stays registered and in the ISR (so the leader's high watermark
stays behind its log end) for as long as a Spark query takes, two minutes at most."""


def session_builder(master: str) -> SparkSession.Builder:
    return (
        SparkSession.builder.master(master)
        .appName("highwater-spark-tests")
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
        .config("spark.driver.extraJavaOptions", JAVA_OPTIONS)
        .config("spark.executor.extraJavaOptions", JAVA_OPTIONS)
    )


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = session_builder("local[2]").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def stop_streaming_queries(request: pytest.FixtureRequest) -> Iterator[None]:
    """A failed test must not leave a query running into the next one."""
    yield
    if "spark" in request.fixturenames:
        session = request.getfixturevalue("spark")
        for query in session.streams.active:
            query.stop()


cluster = cluster_fixture(SPEC, scope="session")
"""The session's brokers, started once per worker: the Spark suite's start-up is the JVM's, not the brokers'."""
