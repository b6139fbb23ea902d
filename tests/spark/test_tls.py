"""The Spark source and sink against a broker that serves only HTTPS and requires client certificates.

The driver plans over TLS, the executors fetch and the sink produces over TLS with the
options the input partitions and the writer carry to them; without a client certificate
a read trusting another CA is refused at the first metadata call, not retried.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture
from tests.support.pki import Pki, make_pki

pytestmark = [pytest.mark.spark, pytest.mark.integration]

ROWS = 50

cluster = cluster_fixture(ClusterSpec(brokers=1, tls=True, settings={"tls.client_auth": "required"}), "module")
"""One broker serving only HTTPS, requiring a client certificate."""


@pytest.fixture(scope="module")
def topic(cluster: Cluster) -> str:
    cluster.create_topic("spark-tls", partitions=2, replication_factor=1)
    return "spark-tls"


@pytest.fixture(scope="module")
def pki(cluster: Cluster) -> Pki:
    assert cluster.pki is not None
    return cluster.pki


def tls_options(pki: Pki) -> dict[str, Any]:
    return {"ssl_ca_file": str(pki.ca_file), "ssl_cert_file": str(pki.client_cert), "ssl_key_file": str(pki.client_key)}


def test_sink_writes_and_source_reads_back_over_mtls(
    spark: SparkSession, cluster: Cluster, topic: str, pki: Pki
) -> None:
    rows = [(b"value-%d" % i, i % 2) for i in range(ROWS)]
    (
        spark.createDataFrame(rows, "value binary, partition int")
        .write.mode("append")
        .format("highwater")
        .option("servers", cluster.url())
        .option("topic", topic)
        .options(**tls_options(pki))
        .save()
    )
    read = (
        spark.read.format("highwater")
        .option("servers", cluster.url())
        .option("subscribe", topic)
        .options(**tls_options(pki))
        .load()
        .collect()
    )
    assert sorted(bytes(row.value) for row in read) == sorted(value for value, _ in rows)
    assert {row.partition for row in read} == {0, 1}


def test_source_trusting_another_ca_is_refused_at_once(
    spark: SparkSession, cluster: Cluster, topic: str, tmp_path: Path
) -> None:
    reader = (
        spark.read.format("highwater")
        .option("servers", cluster.url())
        .option("subscribe", topic)
        .options(**tls_options(make_pki(tmp_path / "other")))
    )
    with pytest.raises((PySparkException, Py4JJavaError), match="TLS handshake failed"):
        reader.load().collect()
