"""The two KIP-101 failure sequences, driven with real processes.

Before KIP-101 a restarted follower truncated its log to its own high watermark,
which can lag the leader's by one fetch; leader epochs replaced that rule. These are
REPLICATION-REFERENCE scenarios 8 and 9. In both, the third replica is stopped first
so that the ISR is the two replicas of the KIP's two-broker story.
"""

from __future__ import annotations

import pytest

from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from broker.storage.log_manager import HIGH_WATERMARK_CHECKPOINT_FILE, partition_directory_name
from tests.support.cluster import Cluster
from tests.support.replication import (
    TOPIC,
    assert_replica_files_identical,
    create_replicated,
    decode_values,
    describe,
    produce_ok,
    read_all,
    truncations,
    wait_for_isr,
    wait_for_leader,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}


def _shrink_to_two(cluster: Cluster) -> tuple[int, int, int]:
    """Kill one follower and wait until the ISR is {leader, other follower}; return the three ids."""
    leader = describe(cluster)["leader_id"]
    follower, stopped = sorted(ALL_BROKERS - {leader})
    cluster.brokers[stopped].kill()
    produce_ok(cluster, TOPIC, "shrinks-the-isr", acks="1")
    wait_for_isr(cluster, TOPIC, {leader, follower}, timeout_s=10)
    return leader, follower, stopped


def _wait_for_follower_end_offset(cluster: Cluster, follower: int) -> int:
    def caught_up() -> int | None:
        description = describe(cluster)
        ends = {r["broker_id"]: r["log_end_offset"] for r in description["replicas_state"]}
        return int(description["log_end_offset"]) if ends[follower] == description["log_end_offset"] else None

    return wait_until(caught_up, f"broker {follower} to fetch the leader's whole log", 10)


def test_committed_record_survives_a_follower_restart_followed_by_the_leader_crash(cluster: Cluster) -> None:
    """KIP-101 #1: the follower B has m and the leader's HW covers m; B restarts (with
    its HW checkpoint deleted, the worst case: its HW says nothing is committed) and
    the leader dies at once. m must survive on the new leader.

    Here, as in KRaft, a killed broker leaves the ISR when its session ends, so B can
    lead again only after it has fetched and rejoined the ISR; the leader is killed
    the moment it has. Before KIP-101, B would have cut m by truncating to its own HW
    at restart; so besides m surviving, B's log must show no truncation at all.
    """
    create_replicated(cluster)
    leader, follower, stopped = _shrink_to_two(cluster)
    m_offset = produce_ok(cluster, TOPIC, "m")
    committed = read_all(cluster)
    assert committed[-1] == (m_offset, "m")

    cluster.brokers[follower].kill()
    (cluster.brokers[follower].data_dir / HIGH_WATERMARK_CHECKPOINT_FILE).unlink(missing_ok=True)
    cluster.brokers[follower].start()
    wait_for_isr(cluster, TOPIC, {leader, follower}, timeout_s=15)
    cluster.brokers[leader].kill()

    elected = wait_for_leader(cluster, excluding=leader)
    assert elected["leader_id"] == follower
    assert elected["log_end_offset"] == m_offset + 1, "the restarted follower cut m from its log"
    assert truncations(cluster, follower) == [], "a restarted follower must not truncate to its HW"
    cluster.brokers[stopped].start()
    healed = wait_for_isr(cluster, TOPIC, {follower, stopped}, timeout_s=15)
    assert healed["high_watermark"] == m_offset + 1
    assert read_all(cluster) == committed

    cluster.brokers[leader].start()
    wait_for_isr(cluster, TOPIC, ALL_BROKERS, timeout_s=15)
    assert decode_values(assert_replica_files_identical(cluster)) == committed


def _lose_unflushed_tail(cluster: Cluster, broker_id: int, keep_end_offset: int) -> None:
    """Simulate power loss on a stopped broker: its log keeps only offsets below ``keep_end_offset``."""
    directory = cluster.brokers[broker_id].data_dir / partition_directory_name(TOPIC, 0)
    log = PartitionLog.open(directory, LogConfig(), topic=TOPIC, partition=0)
    try:
        log.truncate_to(keep_end_offset)
    finally:
        log.close()


def test_replica_that_lost_its_tail_leads_and_the_other_converges_to_its_log(cluster: Cluster) -> None:
    """KIP-101 #2: both replicas crash; one loses its unflushed tail, comes back first
    and takes new writes at the same offsets; the other returns and must end with the
    new leader's records, not a mix of both histories."""
    create_replicated(cluster)
    leader, follower, stopped = _shrink_to_two(cluster)
    for i in range(5):
        produce_ok(cluster, TOPIC, f"committed-{i}")
    committed = read_all(cluster)
    assert committed[-1][1] == "committed-4"
    tail = [(produce_ok(cluster, TOPIC, f"old-tail-{i}", acks="1"), f"old-tail-{i}") for i in range(3)]
    assert _wait_for_follower_end_offset(cluster, follower) == tail[-1][0] + 1
    old_epoch = describe(cluster)["leader_epoch"]

    cluster.brokers[leader].kill()
    cluster.brokers[follower].kill()
    _lose_unflushed_tail(cluster, follower, keep_end_offset=len(committed))
    cluster.brokers[follower].start()
    elected = wait_for_leader(cluster, excluding=leader)
    assert elected["leader_id"] == follower and elected["leader_epoch"] > old_epoch
    assert elected["log_end_offset"] == len(committed)
    new_tail = [(produce_ok(cluster, TOPIC, f"new-tail-{i}", acks="1"), f"new-tail-{i}") for i in range(2)]
    assert [offset for offset, _ in new_tail] == [offset for offset, _ in tail[:2]], "same offsets, new values"

    cluster.brokers[leader].start()
    wait_for_isr(cluster, TOPIC, {follower, leader}, timeout_s=15)
    cluster.brokers[stopped].start()
    healed = wait_for_isr(cluster, TOPIC, ALL_BROKERS, timeout_s=15)
    assert healed["leader_id"] == follower
    assert [e["requested_offset"] for e in truncations(cluster, leader)] == [len(committed)], (
        "the old leader truncates exactly its divergent tail, at the new epoch's start offset"
    )
    expected = [*committed, *new_tail]
    assert read_all(cluster) == expected
    assert decode_values(assert_replica_files_identical(cluster)) == expected
