"""Move plans: draining a broker, balancing replica counts, a fresh placement; racks kept distinct where they can be."""

from __future__ import annotations

from collections import Counter

import pytest

from broker.cluster.move_plans import balance, drain, even_leaders, generate, replica_counts
from broker.errors import InvalidReplicaAssignment

NO_RACKS: dict[int, str | None] = {1: None, 2: None, 3: None, 4: None}


def spread(partitions: int, brokers: list[int], factor: int = 2) -> dict[tuple[str, int], list[int]]:
    return {("t", p): [brokers[(p + i) % len(brokers)] for i in range(factor)] for p in range(partitions)}


def test_draining_moves_every_replica_off_the_broker_in_place_onto_the_least_loaded():
    assignment = {("t", 0): [1, 2], ("t", 1): [2, 1], ("t", 2): [2, 3], ("u", 0): [3, 2]}
    plan = drain(assignment, 1, NO_RACKS)
    assert plan.moves == {("t", 0): [4, 2], ("t", 1): [2, 4]}
    after = {**assignment, **plan.moves}
    assert replica_counts(after, [1, 2, 3, 4])[1] == 0


def test_draining_prefers_a_rack_the_partition_does_not_use():
    racks = {1: "a", 2: "b", 3: "b", 4: "c"}
    plan = drain({("t", 0): [1, 2], ("t", 1): [4, 2]}, 1, racks)
    assert plan.moves == {("t", 0): [4, 2]}, "broker 3 holds less but shares broker 2's rack"
    assert plan.rack_warnings == []


def test_a_rack_that_must_be_shared_is_reported():
    racks = {1: "a", 2: "b", 3: "b"}
    plan = drain({("t", 0): [1, 2]}, 1, racks)
    assert plan.moves == {("t", 0): [3, 2]}
    assert plan.rack_warnings == [
        "t-0: replicas [3, 2] share a rack ('b', 'b'); no broker on another rack could take one"
    ]


def test_a_partition_with_nowhere_to_go_refuses_the_drain():
    with pytest.raises(InvalidReplicaAssignment, match="t-0 cannot leave broker 1: every other broker"):
        drain({("t", 0): [1, 2]}, 1, {1: None, 2: None})


def test_balancing_spreads_replicas_onto_an_added_broker_in_bounded_steps():
    assignment = spread(12, [1, 2, 3])
    first = balance(assignment, NO_RACKS, tolerance=0.1, max_moves=2)
    assert len(first.moves) == 2
    current = dict(assignment)
    for _ in range(10):
        plan = balance(current, NO_RACKS, tolerance=0.1, max_moves=2)
        if not plan.moves:
            break
        current.update(plan.moves)
    counts = replica_counts(current, NO_RACKS)
    assert counts == {1: 6, 2: 6, 3: 6, 4: 6}
    assert all(len(set(replicas)) == len(replicas) for replicas in current.values())


def test_balancing_never_moves_onto_or_counts_a_broker_left_out():
    """Broker 1 is being drained (or gone): it is no destination, and its many replicas do not
    drag the mean up so that the others look under-loaded."""
    assignment = {**spread(6, [2, 3, 4]), **{("d", p): [1, 2 + p % 3] for p in range(9)}}
    others: dict[int, str | None] = {2: None, 3: None, 4: None}
    plan = balance(assignment, others, tolerance=0.0, max_moves=100)
    assert all(1 not in target for target in plan.moves.values())
    assert plan.moves == {}, "2, 3 and 4 each hold 7 replicas: balanced among themselves"


def test_a_balanced_cluster_needs_no_move():
    assert balance(spread(8, [1, 2, 3, 4]), NO_RACKS).moves == {}


def test_balancing_keeps_racks_distinct_where_it_can():
    racks = {1: "a", 2: "b", 3: "a", 4: "b"}
    assignment = {("t", p): [1, 2] for p in range(4)}
    plan = balance(assignment, racks, tolerance=0.0, max_moves=10)
    after = {**assignment, **plan.moves}
    assert all({racks[b] for b in replicas} == {"a", "b"} for replicas in after.values())
    assert replica_counts(after, racks) == {1: 2, 2: 2, 3: 2, 4: 2}


def test_a_fresh_plan_places_the_topics_over_the_given_brokers_and_lists_only_what_changes():
    assignment = {("t", 0): [1, 2], ("t", 1): [2, 3], ("u", 0): [1, 2]}
    plan = generate(assignment, {2: None, 3: None, 4: None}, ["t"])
    assert set(plan.moves) <= {("t", 0), ("t", 1)}
    after = {**assignment, **plan.moves}
    assert all(set(after[("t", p)]) <= {2, 3, 4} for p in (0, 1))
    assert after[("u", 0)] == [1, 2]


def test_a_fresh_plan_and_balancing_keep_each_partitions_replica_count():
    """A reassignment left partition 1 with three replicas where the others have two: plans place
    every partition at its own count, never at partition 0's."""
    assignment = {("t", 0): [1, 2], ("t", 1): [1, 2, 3], ("t", 2): [3, 1]}
    brokers: dict[int, str | None] = {2: None, 3: None, 4: None, 5: None}
    after = {**assignment, **generate(assignment, brokers, ["t"]).moves}
    assert {key: len(replicas) for key, replicas in after.items()} == {("t", 0): 2, ("t", 1): 3, ("t", 2): 2}
    assert all(set(replicas) <= set(brokers) and len(set(replicas)) == len(replicas) for replicas in after.values())
    balanced = {**assignment, **balance(assignment, {1: None, **brokers}, tolerance=0.0, max_moves=10).moves}
    assert {key: len(replicas) for key, replicas in balanced.items()} == {("t", 0): 2, ("t", 1): 3, ("t", 2): 2}
    assert balanced != assignment, "the plan moved nothing, so it kept nothing either"


def test_evening_leaders_reorders_replicas_until_each_broker_is_preferred_about_equally():
    """After a drain gave broker 4 every preferred leadership it replaced: reorders only, no replica moves."""
    assignment = {("t", p): [4, 2 + p % 2] for p in range(8)} | {("u", p): [2, 3] for p in range(2)}
    plan = even_leaders(assignment, {2: None, 3: None, 4: None}, tolerance=0.1, max_moves=100)
    current = {**assignment, **plan.moves}
    assert all(sorted(current[key]) == sorted(assignment[key]) for key in assignment), "a replica moved"
    firsts = Counter(replicas[0] for replicas in current.values())
    assert max(firsts.values()) - min(firsts.values()) <= 1, firsts
    assert even_leaders(current, {2: None, 3: None, 4: None}, tolerance=0.1).moves == {}


def test_evening_leaders_is_bounded_per_step_and_ignores_brokers_left_out():
    assignment = {("t", p): [1, 2, 3] for p in range(9)}
    plan = even_leaders(assignment, {2: None, 3: None}, tolerance=0.0, max_moves=3)
    assert plan.moves == {}, "broker 1 is left out (being drained): its preferred leaderships are the drain's"
    step = even_leaders(assignment, {1: None, 2: None, 3: None}, tolerance=0.0, max_moves=3)
    assert len(step.moves) == 3
