"""Fixtures of the multi-broker tests (``test_cluster_*.py``), defined in ``cluster_harness``."""

from tests.integration.cluster_harness import live_cluster_factory, metadata_store

__all__ = ["live_cluster_factory", "metadata_store"]
