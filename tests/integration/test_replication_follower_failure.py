"""A follower fails (SIGKILL) or stalls (SIGSTOP): the ISR shrinks, acks=all goes on
with the two replicas left, and the follower comes back into the ISR with identical bytes.

REPLICATION-REFERENCE scenarios 1, 6 and 12; 3 brokers, RF 3, min.insync.replicas 2,
``replica.lag.time.max.ms`` 2000 (``tests.support.replication.FAST_ENV``).
"""

from __future__ import annotations

import time

import pytest

from tests.support.replication import (
    REPLICA_LAG_TIME_MAX_MS,
    ReplicatedTopic,
    assert_replica_files_identical,
    decode_values,
)

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
SHRINK_BOUND_S = 1.5 * REPLICA_LAG_TIME_MAX_MS / 1000 + 1.5
"""The first acks=all after a follower stops waits at most ~1.5 × lag time (the shrink
check runs every lag/2) plus the ISR write and some scheduling slack."""


def _a_follower(description: dict) -> int:
    return min(ALL_BROKERS - {description["leader_id"]})


def test_killed_follower_leaves_the_isr_then_rejoins_with_identical_bytes(cluster) -> None:
    topic = ReplicatedTopic(cluster)
    topic.create()
    acknowledged = [(topic.produce_ok(f"before-{i}"), f"before-{i}") for i in range(20)]
    description = topic.describe()
    follower = _a_follower(description)

    cluster.brokers[follower].kill()
    killed_at = time.monotonic()
    offset = topic.produce_ok("stalled-until-shrink", timeout_ms=15_000)
    stall_s = time.monotonic() - killed_at
    acknowledged.append((offset, "stalled-until-shrink"))
    assert stall_s < SHRINK_BOUND_S, f"acks=all stalled {stall_s:.2f} s after the follower died"
    shrunk = topic.wait_for_isr(ALL_BROKERS - {follower}, timeout_s=2)
    assert shrunk["leader_id"] == description["leader_id"]

    write_started = time.monotonic()
    acknowledged += [(topic.produce_ok(f"while-down-{i}"), f"while-down-{i}") for i in range(30)]
    assert time.monotonic() - write_started < 5, "acks=all with two in-sync replicas should not stall"

    cluster.brokers[follower].start()
    rejoined = topic.wait_for_isr(ALL_BROKERS, timeout_s=10)
    leader_end_offset = rejoined["log_end_offset"]
    assert {r["broker_id"]: r["log_end_offset"] for r in rejoined["replicas_state"]} == {
        b: leader_end_offset for b in ALL_BROKERS
    }
    acknowledged.append((topic.produce_ok("after-rejoin"), "after-rejoin"))

    assert topic.read_all() == sorted(acknowledged)
    assert [offset for offset, _ in sorted(acknowledged)] == list(range(len(acknowledged)))
    raw = assert_replica_files_identical(cluster)
    assert decode_values(raw) == sorted(acknowledged)


def test_paused_follower_is_removed_and_readmitted_after_sigcont(cluster) -> None:
    topic = ReplicatedTopic(cluster)
    topic.create()
    topic.produce_ok("warm-up")
    description = topic.describe()
    follower = _a_follower(description)

    cluster.brokers[follower].pause()
    paused_at = time.monotonic()
    try:
        offset = topic.produce_ok("waits-for-the-shrink", timeout_ms=15_000)
        assert time.monotonic() - paused_at < SHRINK_BOUND_S
        shrunk = topic.wait_for_isr(ALL_BROKERS - {follower}, timeout_s=2)
        assert shrunk["high_watermark"] == offset + 1
        lagging = {r["broker_id"]: r for r in shrunk["replicas_state"]}[follower]
        assert lagging["in_sync"] is False
        assert lagging["log_end_offset"] < shrunk["log_end_offset"]
    finally:
        cluster.brokers[follower].resume()
    resumed_at = time.monotonic()

    expanded = topic.wait_for_isr(ALL_BROKERS, timeout_s=10)
    assert time.monotonic() - resumed_at < 5, "a resumed follower should rejoin within a few fetches"
    assert expanded["leader_id"] == description["leader_id"]
    assert expanded["leader_epoch"] == description["leader_epoch"], "a follower's pause is no leader change"
    assert all(r["log_end_offset"] == expanded["log_end_offset"] for r in expanded["replicas_state"])
    assert topic.read_all() == [(0, "warm-up"), (offset, "waits-for-the-shrink")]
    assert_replica_files_identical(cluster)
