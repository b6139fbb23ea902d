"""The Spark source and sink against a broker that serves only HTTPS and requires client certificates.

The driver plans over TLS, the executors fetch and the sink produces over TLS with the
options the input partitions and the writer carry to them; without a client certificate
a read trusting another CA is refused at the first metadata call, not retried.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

from tests.support.brokers import BrokerProcess, http_json
from tests.support.pki import Pki, make_pki

pytestmark = [pytest.mark.spark, pytest.mark.integration]

ROWS = 50
TOPIC = "spark-tls"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("spark-pki"))


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[BrokerProcess]:
    root = tmp_path_factory.mktemp(TOPIC)
    broker = BrokerProcess(1, root / "broker-1", f"sqlite://{root / 'metadata.db'}")
    broker.env = pki.broker_env(client_auth="required")
    broker.ssl_context = pki.client_context()
    broker.start()
    context = broker.ssl_context
    cluster_id = http_json("GET", f"{broker.url}/v3/clusters", context=context)[1]["data"][0]["cluster_id"]
    body = {"topic_name": TOPIC, "partitions_count": 2, "replication_factor": 1}
    status, reply = http_json("POST", f"{broker.url}/v3/clusters/{cluster_id}/topics", body, context=context)
    assert status == 201, reply
    yield broker
    broker.stop()


def tls_options(pki: Pki) -> dict[str, Any]:
    return {"ssl_ca_file": str(pki.ca_file), "ssl_cert_file": str(pki.client_cert), "ssl_key_file": str(pki.client_key)}


def test_sink_writes_and_source_reads_back_over_mtls(spark, tls_broker: BrokerProcess, pki: Pki) -> None:
    rows = [(b"value-%d" % i, i % 2) for i in range(ROWS)]
    (
        spark.createDataFrame(rows, "value binary, partition int")
        .write.mode("append")
        .format("highwater")
        .option("servers", tls_broker.url)
        .option("topic", TOPIC)
        .options(**tls_options(pki))
        .save()
    )
    read = (
        spark.read.format("highwater")
        .option("servers", tls_broker.url)
        .option("subscribe", TOPIC)
        .options(**tls_options(pki))
        .load()
        .collect()
    )
    assert sorted(bytes(row.value) for row in read) == sorted(value for value, _ in rows)
    assert {row.partition for row in read} == {0, 1}


def test_source_trusting_another_ca_is_refused_at_once(spark, tls_broker: BrokerProcess, tmp_path: Path) -> None:
    reader = (
        spark.read.format("highwater")
        .option("servers", tls_broker.url)
        .option("subscribe", TOPIC)
        .options(**tls_options(make_pki(tmp_path / "other")))
    )
    with pytest.raises((PySparkException, Py4JJavaError), match="TLS handshake failed"):
        reader.load().collect()
