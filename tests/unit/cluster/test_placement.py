"""Replica placement: Kafka's round robin, even leader spread, rack alternation."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.cluster.placement import assign_replicas, rack_alternated_brokers
from broker.errors import InvalidPartitions, InvalidReplicationFactor

NO_RACKS = [(1, None), (2, None), (3, None)]


def test_matches_kafka_round_robin_with_a_fixed_start_index() -> None:
    # AdminUtils.assignReplicasToBrokersRackUnaware(6 partitions, rf 3, brokers 0..4, start 0)
    brokers = [(broker_id, None) for broker_id in range(5)]
    assignment = assign_replicas(6, 3, brokers, start_index=0)
    assert assignment == [
        [0, 1, 2],
        [1, 2, 3],
        [2, 3, 4],
        [3, 4, 0],
        [4, 0, 1],
        [0, 2, 3],
    ]


def test_leaders_rotate_over_every_broker_evenly() -> None:
    assignment = assign_replicas(9, 2, NO_RACKS)
    leaders = Counter(replicas[0] for replicas in assignment)
    assert leaders == {1: 3, 2: 3, 3: 3}


def test_followers_of_one_brokers_leaderships_are_spread() -> None:
    brokers = [(broker_id, None) for broker_id in range(1, 5)]
    assignment = assign_replicas(8, 2, brokers, start_index=0)
    followers_of_broker_1 = {replicas[1] for replicas in assignment if replicas[0] == 1}
    assert len(followers_of_broker_1) == 2


def test_start_follows_the_least_loaded_broker() -> None:
    assignment = assign_replicas(1, 1, NO_RACKS, existing_leader_counts={1: 4, 2: 1, 3: 2})
    assert assignment == [[2]]


def test_successive_single_partition_topics_stay_balanced() -> None:
    counts: Counter[int] = Counter()
    for _ in range(6):
        (replicas,) = assign_replicas(1, 2, NO_RACKS, existing_leader_counts=counts)
        counts[replicas[0]] += 1
    assert counts == {1: 2, 2: 2, 3: 2}


def test_rack_alternated_list_takes_one_broker_per_rack_in_turn() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "a"}
    assert rack_alternated_brokers(racks) == [1, 3, 5, 2, 4, 6]


def test_rack_aware_replicas_land_on_distinct_racks() -> None:
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c"), (6, "c")]
    assignment = assign_replicas(12, 3, brokers)
    rack = dict(brokers)
    for replicas in assignment:
        assert len({rack[b] for b in replicas}) == 3, replicas
    assert Counter(replicas[0] for replicas in assignment) == {b: 2 for b, _ in brokers}


def test_rack_aware_with_fewer_racks_than_replicas_uses_every_rack() -> None:
    brokers = [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    for replicas in assign_replicas(8, 3, brokers):
        racks = [dict(brokers)[b] for b in replicas]
        assert set(racks) == {"a", "b"} and len(set(replicas)) == 3


def test_replication_factor_above_live_brokers_is_refused_clearly() -> None:
    with pytest.raises(InvalidReplicationFactor, match="replication factor 3 is larger than the 2 live brokers"):
        assign_replicas(1, 3, [(1, None), (2, None)])


@pytest.mark.parametrize(("partitions", "rf", "error"), [(0, 1, InvalidPartitions), (1, 0, InvalidReplicationFactor)])
def test_non_positive_counts_are_refused(partitions: int, rf: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        assign_replicas(partitions, rf, NO_RACKS)


@given(
    broker_ids=st.sets(st.integers(0, 50), min_size=1, max_size=8),
    partitions=st.integers(1, 40),
    data=st.data(),
)
def test_every_assignment_is_well_formed(broker_ids: set[int], partitions: int, data: st.DataObject) -> None:
    rf = data.draw(st.integers(1, len(broker_ids)))
    with_racks = data.draw(st.booleans())
    brokers = [(b, f"r{b % 3}" if with_racks else None) for b in sorted(broker_ids)]
    assignment = assign_replicas(partitions, rf, brokers)
    assert len(assignment) == partitions
    for replicas in assignment:
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= broker_ids
    leaders = Counter(replicas[0] for replicas in assignment)
    assert max(leaders.values()) - min(leaders.get(b, 0) for b in broker_ids) <= 1
