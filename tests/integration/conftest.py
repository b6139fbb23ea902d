"""The replication tests' cluster: three brokers with the harness's fast timings, one per test."""

from tests.support.cluster import ClusterSpec, cluster_fixture

cluster = cluster_fixture(ClusterSpec())
