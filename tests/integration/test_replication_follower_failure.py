"""A follower fails (SIGKILL) or stalls (SIGSTOP): the ISR shrinks, acks=all goes on
with the two replicas left, and the follower comes back into the ISR with identical bytes.

REPLICATION-REFERENCE scenarios 1, 6 and 12; 3 brokers, RF 3, min.insync.replicas 2,
``replica.lag.time.max.ms`` 2000 (the harness's ``FAST_SETTINGS``).
"""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster
from tests.support.replication import (
    TOPIC,
    Description,
    assert_replica_files_identical,
    create_replicated,
    decode_values,
    describe,
    produce_ok,
    read_all,
    wait_for_isr,
)

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
STALLED_PRODUCE_TIMEOUT_MS = 15_000
"""Far beyond the shrink (at most ~1.5 × the lag time): the acks=all that waits for it must
be acknowledged, not time out."""


def _a_follower(description: Description) -> int:
    return min(ALL_BROKERS - {description["leader_id"]})


def test_killed_follower_leaves_the_isr_then_rejoins_with_identical_bytes(cluster: Cluster) -> None:
    create_replicated(cluster)
    acknowledged = [(produce_ok(cluster, TOPIC, f"before-{i}"), f"before-{i}") for i in range(20)]
    description = describe(cluster)
    follower = _a_follower(description)

    cluster.brokers[follower].kill()
    offset = produce_ok(cluster, TOPIC, "stalled-until-shrink", timeout_ms=STALLED_PRODUCE_TIMEOUT_MS)
    acknowledged.append((offset, "stalled-until-shrink"))
    shrunk = wait_for_isr(cluster, TOPIC, ALL_BROKERS - {follower}, timeout_s=2)
    assert shrunk["leader_id"] == description["leader_id"]

    acknowledged += [(produce_ok(cluster, TOPIC, f"while-down-{i}"), f"while-down-{i}") for i in range(30)]
    assert set(describe(cluster)["isr"]) == ALL_BROKERS - {follower}, (
        "acks=all with two in-sync replicas is acknowledged without the dead follower"
    )

    cluster.brokers[follower].start()
    rejoined = wait_for_isr(cluster, TOPIC, ALL_BROKERS, timeout_s=10)
    leader_end_offset = rejoined["log_end_offset"]
    assert {r["broker_id"]: r["log_end_offset"] for r in rejoined["replicas_state"]} == {
        b: leader_end_offset for b in ALL_BROKERS
    }
    acknowledged.append((produce_ok(cluster, TOPIC, "after-rejoin"), "after-rejoin"))

    assert read_all(cluster) == sorted(acknowledged)
    assert [offset for offset, _ in sorted(acknowledged)] == list(range(len(acknowledged)))
    raw = assert_replica_files_identical(cluster)
    assert decode_values(raw) == sorted(acknowledged)


def test_paused_follower_is_removed_and_readmitted_after_sigcont(cluster: Cluster) -> None:
    create_replicated(cluster)
    produce_ok(cluster, TOPIC, "warm-up")
    description = describe(cluster)
    follower = _a_follower(description)

    cluster.brokers[follower].pause()
    try:
        offset = produce_ok(cluster, TOPIC, "waits-for-the-shrink", timeout_ms=STALLED_PRODUCE_TIMEOUT_MS)
        shrunk = wait_for_isr(cluster, TOPIC, ALL_BROKERS - {follower}, timeout_s=2)
        assert shrunk["high_watermark"] == offset + 1
        lagging = {r["broker_id"]: r for r in shrunk["replicas_state"]}[follower]
        assert lagging["in_sync"] is False
        assert lagging["log_end_offset"] < shrunk["log_end_offset"]
    finally:
        cluster.brokers[follower].resume()

    expanded = wait_for_isr(cluster, TOPIC, ALL_BROKERS, timeout_s=10)
    assert expanded["leader_id"] == description["leader_id"]
    assert expanded["leader_epoch"] == description["leader_epoch"], "a follower's pause is no leader change"
    assert all(r["log_end_offset"] == expanded["log_end_offset"] for r in expanded["replicas_state"])
    assert read_all(cluster) == [(0, "warm-up"), (offset, "waits-for-the-shrink")]
    assert_replica_files_identical(cluster)
