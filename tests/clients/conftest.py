"""One real broker process per test module, and a fresh topic per test."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.brokers import BrokerCluster, http_json

_topic_numbers = itertools.count()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerCluster]:
    root: Path = tmp_path_factory.mktemp("clients")
    cluster = BrokerCluster(root, 1).start()
    yield cluster
    cluster.shutdown()


@pytest.fixture(scope="module")
def url(cluster: BrokerCluster) -> str:
    return cluster.any_url()


@pytest.fixture
def make_topic(cluster: BrokerCluster) -> Callable[..., str]:
    """Create a topic, with a unique name unless ``name`` is given; returns the name."""

    def create(partitions: int = 3, configs: dict[str, str] | None = None, name: str | None = None) -> str:
        name = name or f"clients-{next(_topic_numbers)}"
        body = {
            "topic_name": name,
            "partitions_count": partitions,
            "replication_factor": 1,
            "configs": [{"name": key, "value": value} for key, value in (configs or {}).items()],
        }
        base = f"{cluster.any_url()}/v3/clusters/{cluster.cluster_id()}"
        status, reply = http_json("POST", f"{base}/topics", body)
        assert status == 201, reply
        return name

    return create
