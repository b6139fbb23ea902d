"""Fixtures of the multi-broker tests: ``live_cluster_factory`` and ``metadata_store`` of the
``test_cluster_*.py`` tests (defined in ``cluster_harness``) and the replication tests' cluster."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cluster_harness import live_cluster_factory, metadata_store
from tests.support.brokers import BrokerCluster
from tests.support.replication import start_cluster

__all__ = ["cluster", "live_cluster_factory", "metadata_store"]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[BrokerCluster]:
    """Three brokers with the replication tests' short timings; a module with a cluster of
    another shape defines its own ``cluster``."""
    started = start_cluster(tmp_path)
    yield started
    started.shutdown()
