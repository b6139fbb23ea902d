"""One real broker per test module (the harness's ``cluster_fixture``), and topics named after each test.

The client tests break no broker, so a module's tests share its broker and keep apart
by name: ``make_topic`` names each topic after the test (the ``prefix`` fixture).
A module whose tests need more brokers or other settings assigns a ``cluster`` of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

SPEC = ClusterSpec(brokers=1)

cluster = cluster_fixture(SPEC, scope="module")


@pytest.fixture(scope="module")
def url(cluster: Cluster) -> str:
    return cluster.url()


MakeTopic = Callable[..., str]
"""``make_topic(partitions=3, configs=None, name=None)``: creates the topic and returns its name."""


@pytest.fixture
def make_topic(cluster: Cluster, prefix: str) -> MakeTopic:
    """Create a topic, named ``<prefix>-<n>`` unless ``name`` is given, and return its name once it is led."""
    numbers = itertools.count()

    def create(partitions: int = 3, configs: dict[str, str] | None = None, name: str | None = None) -> str:
        name = name or f"{prefix}-{next(numbers)}"
        cluster.create_topic(name, partitions, replication_factor=1, configs=configs)
        return name

    return create
