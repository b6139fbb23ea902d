"""Both replica fetch transports on real brokers: the replication stream (the default) and HTTP.

With each, acks=all writes succeed while a follower is SIGKILLed and restarted (the stream
reconnects, or the requests resume), the follower rejoins the ISR, and the replicas end
byte-identical. The leader's metrics show which way the fetches came: every transport
counts its fetches in the replica fetch histogram, and only the HTTP one as
``POST /internal/fetch`` requests.
"""

from __future__ import annotations

import re
import urllib.request

import pytest

from tests.support.cluster import Clusters, ClusterSpec
from tests.support.replication import (
    TOPIC,
    assert_replica_files_identical,
    create_replicated,
    produce_ok,
    wait_for_isr,
)

pytestmark = pytest.mark.integration


def _metric(text: str, pattern: str) -> float:
    """The sum of the samples whose line matches ``pattern`` (0 when none does)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if re.match(pattern, line))


@pytest.mark.parametrize("transport", ["stream", "http"])
def test_acks_all_writes_replicate_across_a_follower_restart(clusters: Clusters, transport: str) -> None:
    cluster = clusters.start(ClusterSpec().with_settings(replica_fetch_transport=transport))
    description = create_replicated(cluster)
    leader = description["leader_id"]
    follower = min({1, 2, 3} - {leader})
    values = [f"{transport}-{index}" for index in range(30)]
    for value in values[:10]:
        produce_ok(cluster, TOPIC, value)
    cluster.brokers[follower].kill()
    for value in values[10:20]:
        produce_ok(cluster, TOPIC, value)
    cluster.restart(follower)
    wait_for_isr(cluster, TOPIC, {1, 2, 3})
    for value in values[20:]:
        produce_ok(cluster, TOPIC, value)

    with urllib.request.urlopen(f"{cluster.url(leader)}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    replica_fetches = _metric(metrics, r'highwater_fetch_request_duration_seconds_count\{kind="replica"\}')
    http_fetches = _metric(metrics, r'highwater_http_requests_total\{method="POST",route="/internal/fetch"')
    assert replica_fetches > 0
    assert (http_fetches > 0) == (transport == "http"), (replica_fetches, http_fetches)

    assert_replica_files_identical(cluster)
