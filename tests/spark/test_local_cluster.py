"""The source under ``local-cluster[2,1,1024]``, where ``read()`` runs in other JVMs' Python workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.cluster_ops import produce
from tests.spark.conftest import LOG4J2_FILE
from tests.spark.queries import servers
from tests.support.brokers import REPO_ROOT
from tests.support.cluster import Cluster

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_a_query_under_local_cluster_reads_every_record_once(prefix: str, cluster: Cluster, tmp_path: Path) -> None:
    topic = f"{prefix}-local-cluster"
    cluster.create_topic(topic, partitions=2, replication_factor=3)
    produce(cluster, topic, 0, [b"a%d" % i for i in range(200)], records_per_batch=50)
    produce(cluster, topic, 1, [b"b%d" % i for i in range(100)], records_per_batch=50)
    job = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).with_name("local_cluster_job.py")),
            servers(cluster),
            topic,
            str(tmp_path),
            str(LOG4J2_FILE),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert job.returncode == 0, job.stderr[-3000:]
    result = json.loads(job.stdout.strip().splitlines()[-1])
    assert result["executors"] == 2
    assert result["batches"] == 2
    assert result["offsets"] == [[0, o] for o in range(200)] + [[1, o] for o in range(100)]
