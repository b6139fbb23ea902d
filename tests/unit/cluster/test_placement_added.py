"""Placing the partitions added to a topic: the rotation a creation of the larger count would have used."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC, assign_added_partitions, assign_replicas
from broker.errors import InvalidPartitions, InvalidReplicationFactor

FIVE = [(broker_id, None) for broker_id in range(5)]


def test_added_partitions_continue_kafkas_rotation_from_partition_zeros_leader() -> None:
    # Kafka's addPartitions: assignReplicasToBrokersRackUnaware(4, 3, brokers 0..4, fixedStartIndex = 2
    # (the index of partition 0's first replica), startPartitionId = 3), worked by hand
    existing = assign_replicas(3, 3, FIVE, start_index=2)
    assert existing == [[2, 0, 1], [3, 1, 2], [4, 2, 3]]
    assert assign_added_partitions(existing, 7, FIVE) == [[0, 3, 4], [1, 4, 0], [2, 1, 3], [3, 2, 4]]


@given(
    brokers=st.integers(min_value=1, max_value=7),
    data=st.data(),
)
def test_a_grown_topic_is_placed_as_one_created_at_the_larger_count(brokers: int, data: st.DataObject) -> None:
    live = [(broker_id, None) for broker_id in range(brokers)]
    replication_factor = data.draw(st.integers(min_value=1, max_value=brokers))
    start = data.draw(st.integers(min_value=0, max_value=brokers - 1))
    before = data.draw(st.integers(min_value=1, max_value=20))
    after = data.draw(st.integers(min_value=before + 1, max_value=40))
    existing = assign_replicas(before, replication_factor, live, start_index=start)
    whole = assign_replicas(after, replication_factor, live, start_index=start)
    added = assign_added_partitions(existing, after, live)
    assert existing + added == whole
    assert all(len(set(replicas)) == replication_factor for replicas in added)


def test_rack_aware_growth_spreads_each_new_partition_over_racks() -> None:
    racks = [(1, "a"), (2, "a"), (3, "b"), (4, "b")]
    existing = assign_replicas(2, 2, racks)
    for replicas in assign_added_partitions(existing, 6, racks):
        assert {dict(racks)[broker_id] for broker_id in replicas} == {"a", "b"}


@pytest.mark.parametrize("count", [3, 2, 0, -1])
def test_a_count_that_does_not_grow_the_topic_is_refused(count: int) -> None:
    with pytest.raises(InvalidPartitions, match="already has 3 partitions"):
        assign_added_partitions(assign_replicas(3, 1, FIVE), count, FIVE)


def test_growth_past_the_partition_limit_is_refused() -> None:
    with pytest.raises(InvalidPartitions, match=f"at most {MAX_PARTITIONS_PER_TOPIC}"):
        assign_added_partitions([[0]], MAX_PARTITIONS_PER_TOPIC + 1, FIVE)


def test_growth_needs_as_many_live_brokers_as_the_topic_has_replicas() -> None:
    existing = assign_replicas(1, 3, FIVE[:3])
    with pytest.raises(InvalidReplicationFactor, match="larger than the 2 live brokers"):
        assign_added_partitions(existing, 2, FIVE[:2])


def test_a_departed_first_leader_starts_the_rotation_at_the_first_live_broker() -> None:
    existing = [[9, 0], [0, 1]]
    assert assign_added_partitions(existing, 3, FIVE[:3]) == assign_replicas(3, 2, FIVE[:3], start_index=0)[2:]
