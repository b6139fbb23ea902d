"""A crashed leader's unreplicated tail is replaced by its successor's history.

The leader takes acks=1 writes while both followers are stopped (SIGSTOP, briefly, so
they stay in the ISR), then it is SIGKILLed; a follower is elected in a new leader
epoch and takes acks=all writes at the same offsets. When the old leader returns, its
fetch reports its last epoch, the new leader answers with the diverging epoch's end
offset, and the old leader truncates there (KIP-101/KIP-279) — never to its own HW.
Afterwards every replica holds the same bytes (REPLICATION-REFERENCE scenarios 1, 3, 15).
"""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster
from tests.support.replication import (
    TOPIC,
    assert_replica_files_identical,
    batch_epochs,
    create_replicated,
    decode_values,
    produce_ok,
    read_all,
    truncations,
    wait_for_isr,
    wait_for_leader,
    write_unreplicated_tail_then_kill_leader,
)

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}


def test_old_leader_truncates_its_divergent_tail_and_all_logs_end_identical(cluster: Cluster) -> None:
    before = create_replicated(cluster)
    committed = [(produce_ok(cluster, TOPIC, f"committed-{i}"), f"committed-{i}") for i in range(10)]
    old_leader = before["leader_id"]

    tail = write_unreplicated_tail_then_kill_leader(cluster, old_leader, count=5)
    assert [offset for offset, _ in tail] == list(range(10, 15))

    elected = wait_for_leader(cluster, excluding=old_leader)
    assert elected["leader_epoch"] > before["leader_epoch"]
    survivor_end = elected["log_end_offset"]
    kept = survivor_end - len(committed)
    assert 0 <= kept < len(tail), "only a fetch already in flight at the SIGSTOP may have carried some tail"
    replacement = [(produce_ok(cluster, TOPIC, f"replacement-{i}"), f"replacement-{i}") for i in range(3)]
    assert [offset for offset, _ in replacement] == [survivor_end + i for i in range(3)]

    cluster.brokers[old_leader].start()
    healed = wait_for_isr(cluster, TOPIC, ALL_BROKERS, timeout_s=15)
    assert healed["leader_id"] == elected["leader_id"]
    assert [e["requested_offset"] for e in truncations(cluster, old_leader)] == [survivor_end], (
        "the old leader truncates exactly at the new epoch's start offset"
    )
    expected = committed + tail[:kept] + replacement
    assert read_all(cluster) == expected

    raw = assert_replica_files_identical(cluster)
    assert decode_values(raw) == expected
    epochs = batch_epochs(raw)
    assert set(epochs[:survivor_end]) == {before["leader_epoch"]}
    assert set(epochs[survivor_end:]) == {elected["leader_epoch"]}, "every batch carries its leader's epoch"
