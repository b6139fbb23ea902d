"""A SIGTERMed leader hands its partitions over before it stops answering.

Found on three hosts: a broker's stop closed its HTTP listener first and only then asked
the controller to move its leaderships, so its followers could no longer fetch, every
acks=all produce waiting there ran out its timeout, and its partitions took no write
for 3 s in each step of a rolling restart. Kafka's broker runs its controlled shutdown
before its socket server stops; so does highwater's now.

Here a follower (not the controller, which the handover needs) is paused (SIGSTOP) while
the lag time and the session are long, so it stays in the ISR and an acks=all produce to
the leader waits for it. SIGTERM to the leader must answer
that produce at once (the leader is no longer the leader: outcome unknown, retry), not
when its timeout ends.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture
from tests.support.replication import TOPIC, create_replicated, describe, produce_ok, produce_one

pytestmark = pytest.mark.integration

PRODUCE_TIMEOUT_MS = 30_000
cluster = cluster_fixture(
    ClusterSpec().with_settings(replica_lag_time_max_ms=120_000, broker_session_timeout_ms=60_000)
)
"""The paused follower neither leaves the ISR nor loses its lease while the test runs."""


def test_a_sigtermed_leader_answers_a_waiting_acks_all_produce_at_once(cluster: Cluster) -> None:
    create_replicated(cluster)
    produce_ok(cluster, TOPIC, "warm-up")
    leader = describe(cluster)["leader_id"]
    follower = min(set(cluster.brokers) - {leader, cluster.controller_id()})
    cluster.brokers[follower].pause()
    try:
        with ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(produce_one, cluster, TOPIC, "waits", "all", PRODUCE_TIMEOUT_MS, leader)
            cluster.wait_until(
                lambda: describe(cluster, via=leader)["log_end_offset"] == 2, "the produce appended at the leader"
            )
            assert not waiting.done(), "the acks=all produce did not wait for the paused follower"
            stopped_at = time.monotonic()
            assert cluster.brokers[leader].stop() == 0
            status, answer = waiting.result(timeout=PRODUCE_TIMEOUT_MS / 1000 + 10)
            answered_s = time.monotonic() - stopped_at
    finally:
        cluster.brokers[follower].resume()
    assert answered_s < PRODUCE_TIMEOUT_MS / 1000 / 3, f"the produce was answered {answered_s:.1f} s after the SIGTERM"
    assert (status, answer["error"]) == (421, "NOT_LEADER_OR_FOLLOWER"), answer
