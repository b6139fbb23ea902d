"""The classic group protocol's state machine (``broker.groups.classic``): pure, time given as ``now_ms``."""

from __future__ import annotations

import pytest

from broker.groups.classic import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicGroupError,
    JoinRequest,
    JoinResult,
)

SESSION_MS = 1000
REBALANCE_MS = 5000


def request(member_id: str = "", protocols: tuple[tuple[str, bytes], ...] = (("range", b"sub"),)) -> JoinRequest:
    return JoinRequest(member_id, "client", "host", "consumer", protocols, SESSION_MS, REBALANCE_MS)


def joined(group: ClassicGroup, member_id: str) -> JoinResult:
    result = group.join_result(member_id)
    assert result is not None, f"{member_id} still waits"
    return result


def refused(name: str, call, *args) -> ClassicGroupError:
    with pytest.raises(ClassicGroupError) as caught:
        call(*args)
    assert caught.value.name == name, caught.value.message
    return caught.value


def stable_pair(now: int = 0) -> tuple[ClassicGroup, str, str]:
    """A group whose two members joined generation 2 and synced; the first is the leader."""
    group = ClassicGroup("g")
    first = group.join(request(), now)
    joined(group, first)
    second = group.join(request(), now)
    first_again = group.join(request(first), now)
    assert first_again == first
    assert joined(group, first).generation == joined(group, second).generation == 2
    assert group.sync(first, 2, {first: b"a", second: b"b"}, now) == b"a"
    assert group.sync(second, 2, {}, now) == b"b"
    return group, first, second


def test_a_lone_member_joins_at_once_as_leader_with_its_own_metadata() -> None:
    group = ClassicGroup("g")
    member = group.join(request(), 0)
    result = joined(group, member)
    assert (result.generation, result.leader, result.protocol_name) == (1, member, "range")
    assert result.members == ((member, b"sub"),)
    assert group.state == COMPLETING_REBALANCE
    assert group.sync(member, 1, {member: b"assigned"}, 0) == b"assigned"
    assert group.state == STABLE


def test_a_second_member_waits_until_the_first_rejoins_and_only_the_leader_gets_the_members() -> None:
    group = ClassicGroup("g")
    first = group.join(request(), 0)
    joined(group, first)
    group.sync(first, 1, {first: b"all"}, 0)
    second = group.join(request(protocols=(("range", b"sub2"),)), 10)
    assert group.join_result(second) is None
    assert group.state == PREPARING_REBALANCE
    refused("REBALANCE_IN_PROGRESS", group.heartbeat, first, 1, 20)
    group.join(request(first), 30)
    leader, follower = joined(group, first), joined(group, second)
    assert leader.generation == follower.generation == 2
    assert leader.leader == follower.leader == first
    assert dict(leader.members) == {first: b"sub", second: b"sub2"}
    assert follower.members == ()


def test_a_follower_waits_for_the_leaders_assignments_and_a_left_out_member_gets_an_empty_one() -> None:
    group = ClassicGroup("g")
    first = group.join(request(), 0)
    joined(group, first)
    second = group.join(request(), 0)
    group.join(request(first), 0)
    joined(group, first), joined(group, second)
    assert group.sync(second, 2, {}, 0) is None
    assert group.sync(first, 2, {first: b"everything"}, 0) == b"everything"
    assert group.sync(second, 2, None, 0) == b""


def test_a_follower_waiting_for_the_leaders_assignments_is_not_expired_until_they_come() -> None:
    group = ClassicGroup("g")
    first = group.join(request(), 0)
    joined(group, first)
    second = group.join(request(), 0)
    group.join(request(first), 0)
    joined(group, first), joined(group, second)
    assert group.sync(second, 2, {}, 0) is None
    group.heartbeat(first, 2, 2 * SESSION_MS)
    assert group.expire(2 * SESSION_MS) == []
    assert group.sync(first, 2, {second: b"b"}, 2 * SESSION_MS) == b""
    assert group.expire(2 * SESSION_MS + 1) == [second]


def test_old_generations_and_unknown_members_are_fenced() -> None:
    group, first, second = stable_pair()
    refused("ILLEGAL_GENERATION", group.heartbeat, first, 1, 0)
    refused("ILLEGAL_GENERATION", group.sync, second, 1, None, 0)
    refused("ILLEGAL_GENERATION", group.validate_commit, first, 1, 0)
    refused("UNKNOWN_MEMBER_ID", group.heartbeat, "stranger", 2, 0)
    refused("UNKNOWN_MEMBER_ID", group.validate_commit, "stranger", 2, 0)
    refused("UNKNOWN_MEMBER_ID", group.join, request("stranger"), 0)
    group.heartbeat(first, 2, 0)
    group.validate_commit(second, 2, 0)


def test_a_leaving_member_starts_a_rebalance_the_other_completes_alone() -> None:
    group, first, second = stable_pair()
    group.leave(second, 100)
    assert group.state == PREPARING_REBALANCE
    refused("REBALANCE_IN_PROGRESS", group.heartbeat, first, 2, 100)
    refused("UNKNOWN_MEMBER_ID", group.heartbeat, second, 2, 100)
    group.join(request(first), 110)
    result = joined(group, first)
    assert (result.generation, result.members) == (3, ((first, b"sub"),))


def test_the_last_member_leaving_empties_the_group_and_ends_its_generation() -> None:
    group = ClassicGroup("g")
    member = group.join(request(), 0)
    joined(group, member)
    group.leave(member, 10)
    assert (group.state, group.generation, group.leader) == (EMPTY, 2, None)
    group.validate_commit("", -1, 10)


def test_a_member_silent_past_its_session_timeout_is_removed() -> None:
    group, first, second = stable_pair(now=0)
    group.heartbeat(first, 2, SESSION_MS)
    assert group.expire(SESSION_MS + 1) == [second]
    assert set(group.members) == {first}
    assert group.state == PREPARING_REBALANCE
    group.join(request(first), SESSION_MS + 2)
    assert joined(group, first).generation == 3


def test_a_member_waiting_in_join_is_not_expired_while_the_others_are_awaited() -> None:
    group, first, second = stable_pair(now=0)
    group.join(request(second), 500)
    refused("REBALANCE_IN_PROGRESS", group.heartbeat, first, 2, 900)
    assert group.expire(1600) == []
    assert group.join_result(second) is None
    assert group.expire(1901) == [first]
    result = joined(group, second)
    assert (result.generation, result.leader) == (3, second)


def test_rebalance_deadline_removes_laggards_that_are_still_within_their_session() -> None:
    group, first, second = stable_pair(now=0)
    group.join(request(second), 0)
    late = REBALANCE_MS
    for now in range(200, late, 200):
        refused("REBALANCE_IN_PROGRESS", group.heartbeat, first, 2, now)
    assert group.expire(late - 1) == []
    assert group.expire(late) == [first]
    result = joined(group, second)
    assert (result.generation, result.leader, result.members) == (3, second, ((second, b"sub"),))
    refused("UNKNOWN_MEMBER_ID", group.join_result, first)


def test_commits_are_accepted_while_a_rebalance_is_prepared_but_not_while_it_completes() -> None:
    group, first, second = stable_pair()
    group.join(request(second), 0)
    assert group.state == PREPARING_REBALANCE
    group.validate_commit(first, 2, 0)
    group.join(request(first), 0)
    assert group.state == COMPLETING_REBALANCE
    refused("REBALANCE_IN_PROGRESS", group.validate_commit, first, 3, 0)


def test_a_commit_without_member_is_refused_while_the_group_has_members() -> None:
    group, _, _ = stable_pair()
    error = refused("UNKNOWN_MEMBER_ID", group.validate_commit, "", -1, 0)
    assert "2 active member(s)" in error.message
    ClassicGroup("empty").validate_commit("", -1, 0)


def test_a_rebalance_clears_the_previous_generations_assignments() -> None:
    group, first, second = stable_pair()
    group.join(request(second), 0)
    group.join(request(first), 0)
    refused("ILLEGAL_GENERATION", group.sync, second, 2, None, 0)
    assert group.sync(second, 3, {}, 0) is None
    assert group.sync(first, 3, {first: b"new"}, 0) == b"new"
    assert group.sync(second, 3, None, 0) == b""


def test_members_must_share_the_protocol_type_and_one_protocol() -> None:
    group = ClassicGroup("g")
    member = group.join(request(), 0)
    joined(group, member)
    other_type = JoinRequest("", "c", "h", "connect", (("range", b""),), SESSION_MS, REBALANCE_MS)
    error = refused("INCONSISTENT_GROUP_PROTOCOL", group.join, other_type, 0)
    assert "'consumer'" in error.message
    refused("INCONSISTENT_GROUP_PROTOCOL", group.join, request(protocols=(("sticky", b""),)), 0)
    assert set(group.members) == {member}


def test_the_protocol_is_the_one_most_members_prefer_among_those_all_support() -> None:
    group = ClassicGroup("g")
    a = group.join(request(protocols=(("roundrobin", b"a"), ("range", b"a2"))), 0)
    joined(group, a)
    b = group.join(request(protocols=(("range", b"b"), ("roundrobin", b"b2"))), 0)
    c = group.join(request(protocols=(("range", b"c"),)), 0)
    group.join(request(a, protocols=(("roundrobin", b"a"), ("range", b"a2"))), 0)
    result = joined(group, a)
    assert result.protocol_name == "range"
    assert dict(result.members) == {a: b"a2", b: b"b", c: b"c"}
