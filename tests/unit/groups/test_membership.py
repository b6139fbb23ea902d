"""The KIP-848 state machine: join, split, revoke before reassign, expulsion, fencing."""

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from broker.errors.groups import FencedMemberEpoch, NonEmptyGroup, StaleMemberEpoch, UnknownMemberId
from broker.groups.assignors import TopicPartition
from broker.groups.membership import ConsumerGroup, HeartbeatRequest, Subscription

COUNTS = {"t": 6}
SUB = Subscription(topics=frozenset({"t"}))


class Client:
    """A well-behaved member: echoes what it owns, drops revoked partitions at once."""

    def __init__(self, group: ConsumerGroup, member_id: str) -> None:
        self.group, self.member_id = group, member_id
        self.epoch = 0
        self.owned: frozenset[TopicPartition] = frozenset()

    def beat(self, now_ms: int):
        response = self.group.heartbeat(
            HeartbeatRequest(
                self.member_id,
                self.epoch,
                SUB if self.epoch == 0 else None,
                self.owned,
                session_timeout_ms=1000,
                rebalance_timeout_ms=5000,
            ),
            COUNTS,
            now_ms,
        )
        self.epoch, self.owned = response.member_epoch, response.assignment
        return response


def settle(clients, now_ms: int, rounds: int = 6) -> None:
    for _ in range(rounds):
        for client in clients:
            client.beat(now_ms)


def test_three_members_split_six_partitions_disjointly() -> None:
    group = ConsumerGroup("g")
    clients = [Client(group, m) for m in ("a", "b", "c")]
    settle(clients, 0)
    assert group.state == "Stable"
    assert sorted(len(c.owned) for c in clients) == [2, 2, 2]
    assert frozenset().union(*(c.owned for c in clients)) == {("t", p) for p in range(6)}
    group.check_invariants()


def test_partition_moves_only_after_previous_owner_revokes() -> None:
    group = ConsumerGroup("g")
    a = Client(group, "a")
    a.beat(0)
    assert len(a.owned) == 6
    b = Client(group, "b")
    first = b.beat(1)
    assert first.assignment == frozenset()  # every target partition of b is still a's
    b.beat(2)
    assert b.owned == frozenset()
    revoke = a.beat(3)  # told to revoke: assignment shrinks, epoch stays
    assert len(revoke.assignment) == 3 and revoke.member_epoch == a.epoch
    group.check_invariants()
    assert b.beat(4).assignment == frozenset()  # a has not acknowledged yet
    a.beat(5)  # acknowledges by sending the smaller owned set
    assert len(b.beat(6).assignment) == 3
    assert not (a.owned & b.owned)
    group.check_invariants()


def test_silent_member_is_expelled_and_its_partitions_move() -> None:
    group = ConsumerGroup("g")
    clients = [Client(group, m) for m in ("a", "b", "c")]
    settle(clients, 0)
    lost = clients[2].owned
    assert group.expire(900) == []
    for client in clients[:2]:
        client.beat(900)
    assert group.expire(1500) == ["c"]
    settle(clients[:2], 1500)
    assert lost <= clients[0].owned | clients[1].owned
    assert sorted(len(c.owned) for c in clients[:2]) == [3, 3]
    with pytest.raises(UnknownMemberId):
        group.validate_commit("c", clients[2].epoch)
    with pytest.raises(UnknownMemberId):
        clients[2].beat(1600)


def test_member_late_to_revoke_is_expelled_after_rebalance_timeout() -> None:
    group = ConsumerGroup("g")
    a, b = Client(group, "a"), Client(group, "b")
    a.beat(0)
    b.beat(1)
    a.group.heartbeat(HeartbeatRequest("a", a.epoch, None, None, rebalance_timeout_ms=100), COUNTS, 2)
    for now in range(3, 200, 50):
        group.heartbeat(HeartbeatRequest("a", a.epoch, None, None, rebalance_timeout_ms=100), COUNTS, now)
        b.beat(now)
    assert group.expire(300) == ["a"]
    b.beat(301)
    assert len(b.owned) == 6


def test_commit_fencing() -> None:
    group = ConsumerGroup("g")
    a = Client(group, "a")
    a.beat(0)
    group.validate_commit("a", a.epoch)
    with pytest.raises(StaleMemberEpoch):
        group.validate_commit("a", a.epoch - 1)
    with pytest.raises(FencedMemberEpoch):
        group.validate_commit("a", a.epoch + 1)
    with pytest.raises(NonEmptyGroup):
        group.validate_commit(None, None)
    group.remove_member("a", "leave")
    group.validate_commit(None, None)


def test_wrong_heartbeat_epoch_is_fenced_and_rejoin_releases() -> None:
    group = ConsumerGroup("g")
    a = Client(group, "a")
    a.beat(0)
    with pytest.raises(FencedMemberEpoch):
        group.heartbeat(HeartbeatRequest("a", a.epoch + 5), COUNTS, 1)
    rejoined = group.heartbeat(HeartbeatRequest("a", 0, SUB, frozenset()), COUNTS, 2)
    assert len(rejoined.assignment) == 6 and rejoined.member_epoch > a.epoch
    group.check_invariants()


def test_regex_subscription_follows_new_topics() -> None:
    group = ConsumerGroup("g")
    request = HeartbeatRequest("a", 0, Subscription(regex="orders-.*"), frozenset())
    response = group.heartbeat(request, {"orders-eu": 2, "payments": 3}, 0)
    assert response.assignment == {("orders-eu", 0), ("orders-eu", 1)}
    later = group.heartbeat(
        HeartbeatRequest("a", response.member_epoch, None, response.assignment),
        {"orders-eu": 2, "orders-us": 1, "payments": 3},
        1,
    )
    assert ("orders-us", 0) in later.assignment and later.member_epoch > response.member_epoch


class GroupMachine(RuleBasedStateMachine):
    """Random joins, heartbeats, leaves and expiries: never two owners of one partition."""

    def __init__(self) -> None:
        super().__init__()
        self.group = ConsumerGroup("g")
        self.clients: dict[str, Client] = {}
        self.now = 0

    @rule(member=st.sampled_from("abcde"))
    def heartbeat(self, member: str) -> None:
        self.now += 10
        client = self.clients.setdefault(member, Client(self.group, member))
        try:
            client.beat(self.now)
        except (UnknownMemberId, FencedMemberEpoch):
            client.epoch, client.owned = 0, frozenset()

    @rule(member=st.sampled_from("abcde"))
    def leave(self, member: str) -> None:
        if member in self.group.members:
            self.group.remove_member(member, "leave")
            self.clients.pop(member, None)

    @rule(ms=st.integers(0, 3000))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        for member in self.group.expire(self.now):
            self.clients.pop(member, None)

    @invariant()
    def single_owner(self) -> None:
        self.group.check_invariants()
        owned = [tp for c in self.clients.values() for tp in c.owned if c.member_id in self.group.members]
        assert len(owned) == len(set(owned))


TestGroupMachine = GroupMachine.TestCase
TestGroupMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)


def test_a_group_reads_committed_while_a_member_says_it_does() -> None:
    group = ConsumerGroup("g")
    group.heartbeat(HeartbeatRequest("a", 0, SUB, frozenset(), read_committed=True), COUNTS, 0)
    epoch = group.members["a"].member_epoch
    assert group.read_committed
    group.heartbeat(HeartbeatRequest("a", epoch, None, None), COUNTS, 1)
    assert group.read_committed, "a heartbeat that does not say keeps what the member said"
    group.heartbeat(HeartbeatRequest("b", 0, SUB, frozenset()), COUNTS, 2)
    assert not group.members["b"].read_committed and group.read_committed
    group.heartbeat(HeartbeatRequest("a", group.members["a"].member_epoch, None, None, read_committed=False), COUNTS, 3)
    assert not group.read_committed
