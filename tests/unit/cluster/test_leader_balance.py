"""The automatic preferred-leader rebalance's choice (Kafka's per-broker imbalance rule)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.cluster.election import preferred_leader_election
from broker.cluster.leader_balance import imbalanced_brokers, partitions_to_rebalance
from broker.cluster.records import NO_LEADER, PartitionRecord

LIVE = {1, 2, 3}


def record(partition: int, replicas: list[int], leader: int, isr: list[int] | None = None) -> PartitionRecord:
    return PartitionRecord(
        topic="t",
        partition=partition,
        leader=leader,
        leader_epoch=3,
        partition_epoch=7,
        replicas=replicas,
        isr=list(replicas) if isr is None else isr,
    )


def restarted_cluster(returned: int) -> list[PartitionRecord]:
    """Six partitions placed round-robin over 1..3; broker ``returned`` came back and is in
    every ISR again, but the partitions it prefers are still led by their second replica."""
    rotations = [[1, 2, 3], [2, 3, 1], [3, 1, 2]]
    records = []
    for p in range(6):
        replicas = rotations[p % 3]
        leader = replicas[1] if replicas[0] == returned else replicas[0]
        records.append(record(p, replicas, leader))
    return records


def test_a_balanced_cluster_moves_nothing() -> None:
    records = [record(p, [1 + p % 3, 1 + (p + 1) % 3], 1 + p % 3) for p in range(6)]
    assert imbalanced_brokers(records, LIVE, 10) == set()
    assert partitions_to_rebalance(records, LIVE, 10) == []


def test_a_returned_broker_gets_back_every_partition_it_prefers() -> None:
    records = restarted_cluster(returned=2)
    assert imbalanced_brokers(records, LIVE, 10) == {2}
    assert partitions_to_rebalance(records, LIVE, 10) == [("t", 1), ("t", 4)]


def test_imbalance_at_or_below_the_threshold_is_tolerated() -> None:
    """Broker 1 prefers four partitions and leads three: 25 % away."""
    records = [record(p, [1, 2], 1) for p in range(3)] + [record(3, [1, 2], 2)]
    assert partitions_to_rebalance(records, {1, 2}, 25) == []
    assert partitions_to_rebalance(records, {1, 2}, 24) == [("t", 3)]


def test_zero_percent_hands_back_any_single_partition() -> None:
    records = [record(p, [1, 2], 1) for p in range(99)] + [record(99, [1, 2], 2)]
    assert partitions_to_rebalance(records, {1, 2}, 0) == [("t", 99)]


def test_a_preferred_replica_out_of_the_isr_is_not_elected() -> None:
    """Still catching up after its restart: leading now would lose what it lacks."""
    records = [record(0, [1, 2, 3], 2, isr=[2, 3]), record(1, [1, 2, 3], 2)]
    assert imbalanced_brokers(records, LIVE, 10) == {1}
    assert partitions_to_rebalance(records, LIVE, 10) == [("t", 1)]


def test_a_dead_preferred_replica_is_neither_imbalanced_nor_elected() -> None:
    records = [record(0, [1, 2, 3], 2), record(1, [1, 2, 3], 3)]
    assert imbalanced_brokers(records, {2, 3}, 10) == set()
    assert partitions_to_rebalance(records, {2, 3}, 10) == []


def test_a_leaderless_partition_counts_as_not_led_and_gets_its_preferred_replica() -> None:
    records = [record(0, [1, 2], NO_LEADER, isr=[1])]
    assert partitions_to_rebalance(records, {1, 2}, 10) == [("t", 0)]


replica_lists = st.permutations([1, 2, 3, 4]).map(lambda r: r[:3])


@st.composite
def partition_records(draw: st.DrawFn) -> list[PartitionRecord]:
    records = []
    for p in range(draw(st.integers(0, 12))):
        replicas = list(draw(replica_lists))
        isr = [r for r in replicas if draw(st.booleans())] or replicas[:1]
        leader = draw(st.sampled_from([*isr, NO_LEADER]))
        records.append(record(p, replicas, leader, isr))
    return records


@given(partition_records(), st.sets(st.integers(1, 4)), st.integers(0, 100))
def test_only_live_in_sync_preferred_replicas_are_ever_chosen(
    records: list[PartitionRecord], live: set[int], percentage: int
) -> None:
    by_key = {(r.topic, r.partition): r for r in records}
    for key in partitions_to_rebalance(records, live, percentage):
        chosen = by_key[key]
        preferred = chosen.replicas[0]
        assert preferred in live and preferred in chosen.isr and chosen.leader != preferred
        assert preferred in imbalanced_brokers(records, live, percentage)
        assert preferred_leader_election(chosen, live) is not None
