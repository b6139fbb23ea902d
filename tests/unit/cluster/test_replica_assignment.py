"""Manual replica assignments: Kafka's rules for partition ids, replica lists, brokers, and the counts beside them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC
from broker.cluster.replica_assignment import check_brokers, check_exclusive, initial_isr, ordered_assignment
from broker.errors import InvalidPartitions, InvalidReplicaAssignment, InvalidRequest

BROKERS = {1, 2, 3}


def test_pairs_in_any_order_become_replica_lists_by_partition_in_the_given_replica_order() -> None:
    assert ordered_assignment([(2, [3, 1]), (0, [1, 2]), (1, [2, 3])]) == [[1, 2], [2, 3], [3, 1]]


def test_a_single_partition_with_a_single_replica_is_an_assignment() -> None:
    assert ordered_assignment([(0, [7])]) == [[7]]


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([], "at least one partition"),
        ([(1, [1])], "partition ids must be 0 to 0 for 1 partitions: got 1, partition 0 is missing"),
        ([(0, [1]), (2, [2])], "partition ids must be 0 to 1 for 2 partitions: got 2, partition 1 is missing"),
        ([(-1, [1]), (0, [2])], "got -1, partition 1 is missing"),
        ([(0, [1]), (0, [2])], "partition 0 is assigned more than once"),
        ([(0, [])], "partition 0 has no replicas"),
        ([(0, [1, 2]), (1, [])], "partition 1 has no replicas"),
        ([(0, [1, 2]), (1, [3])], "partition 1 has 1 replica(s) but partition 0 has 2"),
        ([(0, [1]), (1, [2, 3])], "partition 1 has 2 replica(s) but partition 0 has 1"),
        ([(0, [1, 1])], "partition 0 names broker 1 more than once"),
        ([(0, [1, 2, 3]), (1, [2, 3, 2])], "partition 1 names broker 2 more than once"),
    ],
)
def test_a_malformed_assignment_is_refused_naming_the_problem(pairs: list, message: str) -> None:
    with pytest.raises(InvalidReplicaAssignment, match=re.escape(message)):
        ordered_assignment(pairs)


def test_an_assignment_above_the_partition_limit_is_invalid_partitions() -> None:
    with pytest.raises(InvalidPartitions, match=str(MAX_PARTITIONS_PER_TOPIC)):
        ordered_assignment((p, [1]) for p in range(MAX_PARTITIONS_PER_TOPIC + 1))


def test_the_error_is_a_400_with_the_rest_proxys_code_for_a_refused_creation() -> None:
    with pytest.raises(InvalidReplicaAssignment) as refused:
        ordered_assignment([(0, [])])
    assert (refused.value.http_status, refused.value.error_code, refused.value.name) == (
        400,
        40002,
        "INVALID_REPLICA_ASSIGNMENT",
    )


@given(st.lists(st.permutations([1, 2, 3, 4]).map(lambda p: p[:2]), min_size=1, max_size=20), st.randoms())
def test_every_well_formed_assignment_comes_back_as_given_whatever_the_order(lists: list, random) -> None:
    pairs = list(enumerate(lists))
    random.shuffle(pairs)
    assert ordered_assignment(pairs) == [list(replicas) for replicas in lists]


def test_registered_live_brokers_pass() -> None:
    check_brokers([[1, 2, 3], [3, 1, 2]], BROKERS, BROKERS)


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ([[1, 4]], "partition 0 names broker 4, which is not a registered broker (registered: 1, 2, 3)"),
        ([[1, 2], [2, -1]], "partition 1 names broker -1, which is not a registered broker"),
    ],
)
def test_an_unregistered_broker_is_refused_naming_it(assignment: list, message: str) -> None:
    with pytest.raises(InvalidReplicaAssignment) as refused:
        check_brokers(assignment, BROKERS, BROKERS)
    assert message in refused.value.message


def test_with_no_broker_registered_the_message_says_none() -> None:
    with pytest.raises(InvalidReplicaAssignment, match=r"\(registered: none\)"):
        check_brokers([[1]], set(), set())


def test_a_broker_in_controlled_shutdown_may_be_named_but_cannot_be_a_partitions_only_replica() -> None:
    check_brokers([[3, 1]], BROKERS, {1, 2})
    with pytest.raises(InvalidReplicaAssignment, match=r"every broker of partition 1 \(3\) is in controlled shutdown"):
        check_brokers([[1], [3]], BROKERS, {1, 2})


@pytest.mark.parametrize(
    ("partitions_count", "replication_factor", "named"),
    [
        (3, None, "partitions_count (3)"),
        (None, 2, "replication_factor (2)"),
        (3, 2, "partitions_count (3) and replication_factor (2)"),
    ],
)
def test_counts_beside_an_assignment_are_refused_naming_them(
    partitions_count: int | None, replication_factor: int | None, named: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        check_exclusive(partitions_count, replication_factor)
    assert f"cannot be combined with {named}" in refused.value.message


def test_no_counts_beside_an_assignment_pass() -> None:
    check_exclusive(None, None)


@pytest.mark.parametrize(
    ("replicas", "live", "isr"),
    [
        ([2, 3, 1], {1, 2, 3}, [2, 3, 1]),
        ([2, 3, 1], {1, 3}, [3, 1]),
        ([2, 3, 1], {1}, [1]),
        ([2, 3], {1}, [2, 3]),
    ],
)
def test_the_initial_isr_is_the_live_replicas_in_order_else_every_replica(
    replicas: list[int], live: set[int], isr: list[int]
) -> None:
    assert initial_isr(replicas, live) == isr
