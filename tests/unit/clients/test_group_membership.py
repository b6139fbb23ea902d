"""The member side of KIP-848 (``consumer.membership.MemberState``): pure reconciliation.

Revocation comes before acquisition, revocations are acknowledged through
``owned_partitions``, stale answers are ignored, fencing drops everything and rejoins.
The last tests run several members against the coordinator's own state machine
(``broker.groups.membership.ConsumerGroup``) and check that no partition is ever owned
by two consumers at once.
"""

from __future__ import annotations

import random

import pytest

from broker.client.types import TopicPartition
from broker.groups.membership import ConsumerGroup, HeartbeatRequest
from broker.groups.membership import Subscription as CoordinatorSubscription
from consumer.membership import JOIN_EPOCH, LEAVE_EPOCH, Acquire, MemberState, Revoke, Subscription

A, B, C = (TopicPartition("t", p) for p in range(3))


def joined(owned: frozenset[TopicPartition], epoch: int = 3) -> MemberState:
    state = MemberState("m1")
    state.subscribe(Subscription(frozenset({"t"})))
    state.on_heartbeat(epoch, owned)
    state.acquired(owned)
    return state


def owned_in_body(state: MemberState) -> set[TopicPartition]:
    body = state.heartbeat_body(10_000, 30_000, "c")
    return {TopicPartition(item["topic"], p) for item in body["owned_partitions"] for p in item["partitions"]}


def test_a_new_member_joins_with_epoch_zero_and_acquires_its_first_target() -> None:
    state = MemberState("m1")
    state.subscribe(Subscription(frozenset({"t", "u"})))
    body = state.heartbeat_body(10_000, 30_000, "client")
    assert body["member_epoch"] == JOIN_EPOCH and body["subscribed_topics"] == ["t", "u"]
    assert body["owned_partitions"] == [] and not state.joined
    assert state.on_heartbeat(1, frozenset({A, B}))
    assert state.next_step() == Acquire(frozenset({A, B}))
    state.acquired(frozenset({A, B}))
    assert state.next_step() is None and state.joined
    assert owned_in_body(state) == {A, B} and state.heartbeat_body(1, 2, "c")["member_epoch"] == 1


def test_revocation_comes_before_acquisition_and_blocks_it() -> None:
    state = joined(frozenset({A, B}))
    state.on_heartbeat(4, frozenset({B, C}))
    assert state.next_step() == Revoke(frozenset({A}))
    with pytest.raises(RuntimeError, match="await revocation"):
        state.acquired(frozenset({C}))
    assert owned_in_body(state) == {A, B}, "a revocation is acknowledged only once it is done"
    state.revoked(frozenset({A}))
    assert owned_in_body(state) == {B}
    assert state.next_step() == Acquire(frozenset({C}))
    state.acquired(frozenset({C}))
    assert state.owned == {B, C} and state.next_step() is None


def test_partitions_outside_the_target_are_never_acquired() -> None:
    state = joined(frozenset({A}))
    with pytest.raises(RuntimeError, match="not in the target"):
        state.acquired(frozenset({B}))
    assert state.owned == {A}


def test_an_answer_older_than_the_epoch_held_is_ignored() -> None:
    state = joined(frozenset({A, B}), epoch=5)
    assert not state.on_heartbeat(4, frozenset())
    assert state.member_epoch == 5 and state.target == {A, B} and state.next_step() is None
    assert state.on_heartbeat(5, frozenset({A, B}))


def test_fencing_loses_every_partition_and_rejoins_with_epoch_zero() -> None:
    state = joined(frozenset({A, B}), epoch=7)
    assert state.fenced() == {A, B}
    assert state.owned == frozenset() and state.target == frozenset()
    body = state.heartbeat_body(10_000, 30_000, "c")
    assert body["member_epoch"] == JOIN_EPOCH and body["subscribed_topics"] == ["t"]
    assert body["owned_partitions"] == []


def test_leaving_sends_epoch_minus_one_and_forgets_the_subscription() -> None:
    state = joined(frozenset({A}))
    assert state.leave_body() == {"member_epoch": LEAVE_EPOCH}
    assert state.left() == {A}
    with pytest.raises(ValueError, match="not subscribed"):
        state.heartbeat_body(10_000, 30_000, "c")


def test_a_subscription_is_topics_or_a_pattern() -> None:
    assert Subscription(pattern=r"orders-.*").body() == {"subscribed_topic_regex": r"orders-.*"}
    with pytest.raises(ValueError):
        Subscription()
    with pytest.raises(ValueError):
        Subscription(frozenset({"t"}), pattern="t.*")


# ---------------------------------------------------------------- against the coordinator's state machine


def beat(group: ConsumerGroup, state: MemberState, counts: dict[str, int], now_ms: int) -> None:
    """One heartbeat round trip plus one reconciliation step, as ``consumer.group.GroupMember`` does it."""
    body = state.heartbeat_body(10_000, 30_000, "c")
    owned = frozenset((item["topic"], p) for item in body["owned_partitions"] for p in item["partitions"])
    request = HeartbeatRequest(
        state.member_id,
        body["member_epoch"],
        CoordinatorSubscription(topics=frozenset(body["subscribed_topics"])),
        owned,
        "c",
        10_000,
        30_000,
    )
    answer = group.heartbeat(request, counts, now_ms)
    state.on_heartbeat(answer.member_epoch, frozenset(TopicPartition(*tp) for tp in answer.assignment))
    step = state.next_step()
    if isinstance(step, Revoke):
        state.revoked(step.partitions)
    elif isinstance(step, Acquire):
        state.acquired(step.partitions)


def assert_disjoint(members: list[MemberState]) -> None:
    seen: dict[TopicPartition, str] = {}
    for member in members:
        for tp in member.owned:
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {member.member_id}"
            seen[tp] = member.member_id


@pytest.mark.parametrize("seed", range(20))
def test_members_joining_and_leaving_never_own_a_partition_twice(seed: int) -> None:
    rng = random.Random(seed)
    counts = {"t": 6}
    group = ConsumerGroup("g")
    members: list[MemberState] = []
    now_ms = 0
    for step in range(300):
        now_ms += 10
        if (rng.random() < 0.05 and len(members) < 4) or not members:
            member = MemberState(f"m{step}")
            member.subscribe(Subscription(frozenset({"t"})))
            members.append(member)
        elif rng.random() < 0.02 and len(members) > 1:
            leaving = members.pop(rng.randrange(len(members)))
            if leaving.member_id in group.members:
                group.remove_member(leaving.member_id, "left")
            leaving.left()
        beat(group, rng.choice(members), counts, now_ms)
        assert_disjoint(members)
        group.check_invariants()
    for _ in range(10):
        for member in members:
            beat(group, member, counts, now_ms)
    assert_disjoint(members)
    assert set().union(*(m.owned for m in members)) == {TopicPartition("t", p) for p in range(6)}, seed
    sizes = sorted(len(m.owned) for m in members)
    assert sizes[-1] - sizes[0] <= 1
