"""A paused broker first in the servers list costs one request timeout, not one per metadata refresh.

Two real brokers; broker 1, first in the servers list and, by its id, first among the
brokers the metadata knows, leads nothing of the test topic and is stopped with SIGSTOP
(it still accepts connections, the kernel's backlog, and never answers: a hung
process, the worst case for a client). Its session timeout outlasts the test, so it
stays registered and every broker list names it: a stall shorter than the session
timeout. Before the client backed off from brokers that gave no answer, every refresh
in that time asked it first and waited out ``request_timeout_ms``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable

import pytest

from broker.client.http import ClusterClient
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

REQUEST_TIMEOUT_MS = 4_000
UNRESPONSIVE_BACKOFF_MS = 120_000
"""Longer than the test, so no refresh here may find the backoff expired."""
REFRESHES = 5
SESSION_TIMEOUT_MS = 120_000

cluster = cluster_fixture(ClusterSpec(brokers=2, settings={"broker_session_timeout_ms": SESSION_TIMEOUT_MS}))
"""Its own cluster: the test pauses a broker."""


def _topic_led_by(cluster: Cluster, leader_id: int, prefix: str) -> str:
    """A one-partition topic led by ``leader_id``.

    No other broker may lead any of it: a broker describing a partition asks its
    leader, so a paused leader would slow the live broker's answers too. Placement puts
    each new topic's leader on the broker leading fewest, so a few topics suffice.
    """
    for attempt in range(len(cluster.brokers) + 1):
        topic = f"{prefix}-{attempt}"
        if cluster.create_topic(topic, 1, replication_factor=1)[0].leader_id == leader_id:
            return topic
    raise AssertionError(f"no topic placed its leader on broker {leader_id}")


async def _seconds(call: Awaitable[object]) -> float:
    started = time.monotonic()
    await call
    return time.monotonic() - started


async def test_a_paused_broker_first_in_the_list_is_waited_for_once(cluster: Cluster, prefix: str) -> None:
    hung, live = cluster.brokers[1], cluster.brokers[2]
    topic = _topic_led_by(cluster, live.node_id, prefix)
    client = ClusterClient(
        [hung.url, live.url], request_timeout_ms=REQUEST_TIMEOUT_MS, unresponsive_backoff_ms=UNRESPONSIVE_BACKOFF_MS
    )
    hung.pause()
    try:
        first = await _seconds(client.partitions(topic))
        later = [await _seconds(client.partitions(topic)) for _ in range(REFRESHES)]
    finally:
        hung.resume()
        await client.close()
    timeout_s = REQUEST_TIMEOUT_MS / 1000
    assert first >= timeout_s, f"the first refresh ({first:.3f} s) asked the paused broker and waited out its timeout"
    assert max(later) < timeout_s, f"a later refresh asked the paused broker again and waited out its timeout: {later}"
    assert client.candidate_urls()[-1] == hung.url, "asked last, never dropped"
