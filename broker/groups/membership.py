"""One consumer group's membership and assignment state machine (KIP-848), pure and synchronous.

Epochs. The *group epoch* rises whenever what the assignment depends on changes: a
member joins, leaves or is expelled, a subscription changes, or a subscribed topic's
partition count changes. The *assignment epoch* is the group epoch the current target
assignment was computed at. Each member has a *member epoch*: the assignment epoch it
has reconciled to.

Reconciliation (``_reconcile``, KIP-848's CurrentAssignmentBuilder), on every
heartbeat of a member behind the assignment epoch:

1. if it owns partitions outside its new target, it is told to revoke them: they move
   to ``revoking``, its assignment shrinks, its member epoch stays; it acknowledges by
   a heartbeat whose ``owned_partitions`` no longer lists them, and only then are they
   released;
2. otherwise it advances to the assignment epoch and receives every target partition
   no other member still owns; the rest arrive on later heartbeats, once released.

Invariant (checked by ``check_invariants``, asserted in the tests): every partition has
at most one owner — ``owners`` maps it to the one member whose ``assigned`` or
``revoking`` set holds it, and no two members' sets intersect. A partition therefore
changes hands only after its previous owner released it, left, or was expelled
(session timeout, or a revocation not acknowledged within the rebalance timeout).

Commits are fenced (``validate_commit``): a member commits with its current member
epoch; an older one is ``STALE_MEMBER_EPOCH``, a newer one ``FENCED_MEMBER_EPOCH``, an
unknown member ``UNKNOWN_MEMBER_ID``. A commit without a member id (an admin or a
stateless user) is accepted only while the group has no members.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from broker.errors.groups import (
    FencedMemberEpoch,
    NonEmptyGroup,
    StaleMemberEpoch,
    UnknownMemberId,
    UnsupportedAssignor,
)
from broker.groups.assignors import ASSIGNORS, Assignment, TopicPartition, assign

log = structlog.get_logger(__name__)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1


@dataclass(slots=True)
class Subscription:
    topics: frozenset[str] | None = None
    regex: str | None = None

    def resolve(self, partition_counts: Mapping[str, int]) -> frozenset[str]:
        if self.regex is not None:
            pattern = re.compile(self.regex)
            return frozenset(topic for topic in partition_counts if pattern.fullmatch(topic))
        return frozenset(topic for topic in self.topics or () if topic in partition_counts)


@dataclass(slots=True)
class HeartbeatRequest:
    member_id: str
    member_epoch: int
    subscription: Subscription | None = None
    """None: unchanged since the last heartbeat (required on join)."""
    owned_partitions: frozenset[TopicPartition] | None = None
    """None: unchanged; a revocation is acknowledged only by sending it."""
    client_id: str = ""
    session_timeout_ms: int = 10_000
    rebalance_timeout_ms: int = 30_000
    read_committed: bool | None = None
    """Whether the member reads ``read_committed`` (stops at the LSO); None: unchanged (``False`` on join)."""


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    member_id: str
    member_epoch: int
    assignment: frozenset[TopicPartition]


@dataclass(slots=True)
class Member:
    member_id: str
    client_id: str
    subscription: Subscription
    session_timeout_ms: int
    rebalance_timeout_ms: int
    last_heartbeat_ms: int
    member_epoch: int = JOIN_EPOCH
    previous_member_epoch: int = LEAVE_EPOCH
    assigned: set[TopicPartition] = field(default_factory=set)
    revoking: set[TopicPartition] = field(default_factory=set)
    revocation_deadline_ms: int | None = None
    subscribed_topics: frozenset[str] = frozenset()
    read_committed: bool = False


class ConsumerGroup:
    """Membership of one group; every method takes ``now_ms`` (no clock inside, so it is testable)."""

    def __init__(self, group_id: str, assignor: str = "uniform") -> None:
        if assignor not in ASSIGNORS:
            raise UnsupportedAssignor(f"assignor {assignor!r} is not one of {', '.join(ASSIGNORS)}")
        self.group_id = group_id
        self.assignor = assignor
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, Member] = {}
        self.target: Assignment = {}
        self.owners: dict[TopicPartition, str] = {}
        self._partition_counts: dict[str, int] = {}
        self._log = log.bind(group_id=group_id)

    # ------------------------------------------------------------ views

    @property
    def state(self) -> str:
        """KIP-848's group states: Empty, Assigning, Reconciling, Stable."""
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.group_epoch:
            return "Assigning"
        settled = all(
            m.member_epoch == self.assignment_epoch and not m.revoking and m.assigned == self.target.get(m.member_id)
            for m in self.members.values()
        )
        return "Stable" if settled else "Reconciling"

    def owner_of(self, tp: TopicPartition) -> str | None:
        return self.owners.get(tp)

    def subscribed_topics(self) -> set[str]:
        return {topic for member in self.members.values() for topic in member.subscribed_topics}

    @property
    def read_committed(self) -> bool:
        """Whether the group reads ``read_committed``: any of its members says so (its lag then ends at the LSO)."""
        return any(member.read_committed for member in self.members.values())

    def check_invariants(self) -> None:
        """No partition owned twice; ``owners`` agrees with the members' sets."""
        seen: dict[TopicPartition, str] = {}
        for member in self.members.values():
            assert not member.assigned & member.revoking, member.member_id
            for tp in member.assigned | member.revoking:
                assert tp not in seen, f"{tp} owned by {seen.get(tp)} and {member.member_id}"
                seen[tp] = member.member_id
        assert seen == self.owners, (seen, self.owners)

    # ------------------------------------------------------------ heartbeat

    def heartbeat(
        self, request: HeartbeatRequest, partition_counts: Mapping[str, int], now_ms: int
    ) -> HeartbeatResponse:
        member = self._accept_member(request, now_ms)
        member.last_heartbeat_ms = now_ms
        if request.read_committed is not None:
            member.read_committed = request.read_committed
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        if request.client_id:
            member.client_id = request.client_id
        if request.subscription is not None and request.subscription != member.subscription:
            member.subscription = request.subscription
            self._bump("subscription_changed", member.member_id)
        self._refresh_subscriptions(partition_counts)
        if request.owned_partitions is not None:
            self._acknowledge_revocation(member, request.owned_partitions)
        self._maybe_compute_target()
        self._reconcile(member, now_ms)
        return HeartbeatResponse(member.member_id, member.member_epoch, frozenset(member.assigned))

    def _accept_member(self, request: HeartbeatRequest, now_ms: int) -> Member:
        """Validate the member epoch (KIP-848) and return the member, joining it if new."""
        member = self.members.get(request.member_id)
        if request.member_epoch == JOIN_EPOCH:
            if member is not None:
                self._release_all(member)
                member.member_epoch, member.previous_member_epoch = JOIN_EPOCH, LEAVE_EPOCH
                self._bump("member_rejoined", member.member_id)
                return member
            if request.subscription is None:
                raise UnknownMemberId("a joining member must send subscribed_topics or subscribed_topic_regex")
            member = Member(
                request.member_id,
                request.client_id,
                request.subscription,
                request.session_timeout_ms,
                request.rebalance_timeout_ms,
                now_ms,
                read_committed=bool(request.read_committed),
            )
            self.members[member.member_id] = member
            self._bump("member_joined", member.member_id)
            return member
        if member is None:
            raise UnknownMemberId(
                f"member {request.member_id!r} is not in group {self.group_id!r}; rejoin with member_epoch 0",
                member_id=request.member_id,
            )
        if request.member_epoch == member.member_epoch:
            return member
        owned = request.owned_partitions
        if (
            request.member_epoch == member.previous_member_epoch
            and owned is not None
            and owned <= member.assigned | member.revoking
        ):
            return member
        raise FencedMemberEpoch(
            f"member {member.member_id!r} sent epoch {request.member_epoch}, the coordinator has "
            f"{member.member_epoch}; drop your partitions and rejoin with member_epoch 0",
            member_id=member.member_id,
            member_epoch=member.member_epoch,
        )

    def _refresh_subscriptions(self, partition_counts: Mapping[str, int]) -> None:
        changed = False
        for member in self.members.values():
            resolved = member.subscription.resolve(partition_counts)
            if resolved != member.subscribed_topics:
                member.subscribed_topics = resolved
                changed = True
        counts = {topic: partition_counts[topic] for topic in self.subscribed_topics()}
        if changed or counts != self._partition_counts:
            self._partition_counts = counts
            self._bump("metadata_changed", None)

    def _bump(self, reason: str, member_id: str | None) -> None:
        self.group_epoch += 1
        self._log.info("group.epoch_bumped", group_epoch=self.group_epoch, reason=reason, member_id=member_id)

    def _maybe_compute_target(self) -> None:
        if self.assignment_epoch == self.group_epoch:
            return
        subscriptions = {m.member_id: m.subscribed_topics for m in self.members.values()}
        self.target = assign(self.assignor, subscriptions, self._partition_counts, self.target)
        self.assignment_epoch = self.group_epoch
        self._log.info(
            "group.target_assignment",
            assignment_epoch=self.assignment_epoch,
            members=len(self.members),
            partitions=sum(len(p) for p in self.target.values()),
        )

    def _acknowledge_revocation(self, member: Member, owned: frozenset[TopicPartition]) -> None:
        released = member.revoking - owned
        for tp in released:
            self.owners.pop(tp, None)
        member.revoking -= released
        if not member.revoking:
            member.revocation_deadline_ms = None

    def _reconcile(self, member: Member, now_ms: int) -> None:
        target = self.target.get(member.member_id, set())
        if member.revoking:
            return
        to_revoke = member.assigned - target
        if to_revoke:
            member.assigned -= to_revoke
            member.revoking |= to_revoke
            member.revocation_deadline_ms = now_ms + member.rebalance_timeout_ms
            self._log.info(
                "group.member_revoking",
                member_id=member.member_id,
                partitions=sorted(to_revoke),
                member_epoch=member.member_epoch,
            )
            return
        if member.member_epoch != self.assignment_epoch:
            member.previous_member_epoch, member.member_epoch = member.member_epoch, self.assignment_epoch
        for tp in sorted(target - member.assigned):
            if self.owners.get(tp) is None:
                self.owners[tp] = member.member_id
                member.assigned.add(tp)

    # ------------------------------------------------------------ leaving

    def _release_all(self, member: Member) -> None:
        for tp in member.assigned | member.revoking:
            if self.owners.get(tp) == member.member_id:
                del self.owners[tp]
        member.assigned.clear()
        member.revoking.clear()
        member.revocation_deadline_ms = None

    def remove_member(self, member_id: str, reason: str) -> None:
        """Leave (``DELETE``) or expulsion: its partitions are free at once, the group epoch rises."""
        member = self.members.pop(member_id, None)
        if member is None:
            raise UnknownMemberId(f"member {member_id!r} is not in group {self.group_id!r}", member_id=member_id)
        self._release_all(member)
        self.target.pop(member_id, None)
        self._bump(reason, member_id)
        self._log.info("group.member_removed", member_id=member_id, reason=reason, members=len(self.members))

    def expire(self, now_ms: int) -> list[str]:
        """Expel members silent past their session timeout or late to revoke; return their ids."""
        expelled = []
        for member in list(self.members.values()):
            if now_ms - member.last_heartbeat_ms > member.session_timeout_ms:
                self.remove_member(member.member_id, "session_timeout")
                expelled.append(member.member_id)
            elif member.revocation_deadline_ms is not None and now_ms > member.revocation_deadline_ms:
                self.remove_member(member.member_id, "rebalance_timeout")
                expelled.append(member.member_id)
        if expelled:
            self._maybe_compute_target()
        return expelled

    # ------------------------------------------------------------ commits

    def validate_commit(self, member_id: str | None, member_epoch: int | None) -> None:
        if not member_id:
            if self.members:
                raise NonEmptyGroup(
                    f"group {self.group_id!r} has {len(self.members)} active member(s); "
                    "commit as a member (member_id and member_epoch) or wait until it is empty"
                )
            return
        member = self.members.get(member_id)
        if member is None:
            raise UnknownMemberId(f"member {member_id!r} is not in group {self.group_id!r}", member_id=member_id)
        if member_epoch is None or member_epoch < member.member_epoch:
            raise StaleMemberEpoch(
                f"commit from member {member_id!r} with epoch {member_epoch}; its current epoch is "
                f"{member.member_epoch}",
                member_epoch=member.member_epoch,
            )
        if member_epoch > member.member_epoch:
            raise FencedMemberEpoch(
                f"commit from member {member_id!r} with epoch {member_epoch}, newer than {member.member_epoch}",
                member_epoch=member.member_epoch,
            )
