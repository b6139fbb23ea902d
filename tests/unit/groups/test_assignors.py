from hypothesis import given
from hypothesis import strategies as st

from broker.groups.assignors import TopicPartition, range_assign, uniform_assign


def loads(assignment):
    return sorted(len(p) for p in assignment.values())


def test_uniform_splits_evenly_and_covers_everything() -> None:
    subs = {m: frozenset({"t"}) for m in ("a", "b", "c")}
    result = uniform_assign(subs, {"t": 8})
    assert loads(result) == [2, 3, 3]
    assert set().union(*result.values()) == {("t", p) for p in range(8)}


def test_uniform_is_sticky_when_a_member_joins() -> None:
    subs = {m: frozenset({"t"}) for m in ("a", "b")}
    before = uniform_assign(subs, {"t": 6})
    after = uniform_assign({**subs, "c": frozenset({"t"})}, {"t": 6}, before)
    assert loads(after) == [2, 2, 2]
    for member in ("a", "b"):
        assert after[member] <= before[member]  # only moves away, nothing shuffled between a and b


def test_uniform_is_sticky_when_a_member_leaves() -> None:
    subs = {m: frozenset({"t"}) for m in ("a", "b", "c")}
    before = uniform_assign(subs, {"t": 9})
    after = uniform_assign({"a": subs["a"], "b": subs["b"]}, {"t": 9}, before)
    assert after["a"] >= before["a"] and after["b"] >= before["b"]
    assert loads(after) == [4, 5]


def test_uniform_respects_subscriptions() -> None:
    subs = {"a": frozenset({"x"}), "b": frozenset({"x", "y"})}
    result = uniform_assign(subs, {"x": 2, "y": 4})
    assert all(tp[0] == "x" for tp in result["a"])
    assert {tp for tp in result["b"] if tp[0] == "y"} == {("y", p) for p in range(4)}


def test_range_gives_contiguous_ranges_first_members_one_more() -> None:
    subs = {m: frozenset({"t"}) for m in ("b", "a", "c")}
    result = range_assign(subs, {"t": 7})
    assert result["a"] == {("t", 0), ("t", 1), ("t", 2)}
    assert result["b"] == {("t", 3), ("t", 4)}
    assert result["c"] == {("t", 5), ("t", 6)}


members = st.lists(st.sampled_from("abcdef"), min_size=1, max_size=6, unique=True)
topic_sets = st.frozensets(st.sampled_from(["x", "y", "z"]), min_size=1)


@given(st.dictionaries(st.sampled_from("abcdef"), topic_sets, min_size=1), st.integers(1, 12), st.integers(1, 12))
def test_every_partition_assigned_exactly_once_to_a_subscriber(subs, x_count, y_count) -> None:
    counts = {"x": x_count, "y": y_count}
    for result in (uniform_assign(subs, counts), range_assign(subs, counts)):
        seen: list[TopicPartition] = []
        for member, partitions in result.items():
            assert all(tp[0] in subs[member] for tp in partitions)
            seen.extend(partitions)
        assert len(seen) == len(set(seen))
        wanted = {(t, p) for t in ("x", "y") if any(t in s for s in subs.values()) for p in range(counts[t])}
        assert set(seen) == wanted


@given(members, st.integers(1, 30), members)
def test_uniform_balanced_within_one_for_homogeneous_after_churn(first, count, second) -> None:
    before = uniform_assign({m: frozenset({"t"}) for m in first}, {"t": count})
    after = uniform_assign({m: frozenset({"t"}) for m in second}, {"t": count}, before)
    sizes = loads(after)
    assert sizes[-1] - sizes[0] <= 1
