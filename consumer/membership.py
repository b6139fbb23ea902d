"""The member's side of KIP-848 group membership. Pure: no I/O, no clock.

The coordinator decides; the member reconciles. Each heartbeat answer carries the
member epoch and the *target*: every partition the member may own now. The member
compares it with what it *owns* (partitions it fetches and hands out) and works
through the difference one step at a time (``next_step``):

1. **Revoke first.** Owned partitions missing from the target are revoked: the
   consumer stops handing them out, commits what it consumed (with auto-commit), and
   only then drops them from ``owned``. The next heartbeat's ``owned_partitions`` no
   longer lists them, which is the acknowledgement the coordinator waits for before
   giving them to another member.
2. **Then acquire.** Target partitions not owned yet are acquired (positions from
   committed offsets). ``acquired`` refuses while a revocation is pending, so a member
   never holds new partitions while it still holds ones it was told to give up.

Invariant: ``owned`` only ever holds partitions of some target the coordinator sent
during the current membership (since the last join); a partition is added to it only
by ``acquired`` and only while no revocation is pending.

Epochs: epoch 0 joins (``JOIN_EPOCH``), -1 leaves (``LEAVE_EPOCH``). An answer with an
older epoch than the one held is ignored (it cannot be newer news). ``fenced`` (after
``UNKNOWN_MEMBER_ID`` or ``FENCED_MEMBER_EPOCH``) gives up every partition *without*
committing — another member may already own them — and rejoins with epoch 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from broker.client.groups import partitions_body
from broker.client.types import TopicPartition

JOIN_EPOCH = 0
LEAVE_EPOCH = -1


@dataclass(frozen=True, slots=True)
class Subscription:
    """Topics by name, or every topic whose whole name matches ``pattern`` (Python ``re`` syntax)."""

    topics: frozenset[str] | None = None
    pattern: str | None = None

    def __post_init__(self) -> None:
        if (self.topics is None) == (self.pattern is None):
            raise ValueError("subscribe to a list of topics or to a pattern, not both and not neither")

    def body(self) -> dict[str, Any]:
        if self.pattern is not None:
            return {"subscribed_topic_regex": self.pattern}
        return {"subscribed_topics": sorted(self.topics or ())}


@dataclass(frozen=True, slots=True)
class Revoke:
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class Acquire:
    partitions: frozenset[TopicPartition]


class MemberState:
    """One member's epoch, subscription, owned partitions and latest target."""

    def __init__(self, member_id: str, isolation_level: str = "read_uncommitted") -> None:
        self.member_id = member_id
        self.isolation_level = isolation_level
        """Sent with every heartbeat: the group's lag is measured where its members read up to."""
        self.member_epoch = JOIN_EPOCH
        self.subscription: Subscription | None = None
        self.owned: frozenset[TopicPartition] = frozenset()
        self.target: frozenset[TopicPartition] = frozenset()

    @property
    def joined(self) -> bool:
        return self.member_epoch > JOIN_EPOCH

    def subscribe(self, subscription: Subscription) -> None:
        """Takes effect with the next heartbeat; the coordinator revokes what no longer matches."""
        self.subscription = subscription

    def heartbeat_body(self, session_timeout_ms: int, rebalance_timeout_ms: int, client_id: str) -> dict[str, Any]:
        """Always the subscription and ``owned_partitions``: both are idempotent and make rejoins safe."""
        if self.subscription is None:
            raise ValueError("not subscribed: nothing to heartbeat for")
        return {
            "member_epoch": self.member_epoch,
            **self.subscription.body(),
            "owned_partitions": partitions_body(self.owned),
            "session_timeout_ms": session_timeout_ms,
            "rebalance_timeout_ms": rebalance_timeout_ms,
            "client_id": client_id,
            "isolation_level": self.isolation_level,
        }

    def leave_body(self) -> dict[str, Any]:
        return {"member_epoch": LEAVE_EPOCH}

    def on_heartbeat(self, member_epoch: int, target: frozenset[TopicPartition]) -> bool:
        """Adopt the coordinator's answer; False (ignored) if it is older than the epoch held."""
        if member_epoch < self.member_epoch:
            return False
        self.member_epoch = member_epoch
        self.target = frozenset(target)
        return True

    def next_step(self) -> Revoke | Acquire | None:
        """What to do to reach the target: revocations always come before acquisitions."""
        revoking = self.owned - self.target
        if revoking:
            return Revoke(revoking)
        acquiring = self.target - self.owned
        if acquiring:
            return Acquire(acquiring)
        return None

    def revoked(self, partitions: frozenset[TopicPartition]) -> None:
        """The consumer stopped reading ``partitions`` (and committed them if it auto-commits)."""
        self.owned -= partitions

    def acquired(self, partitions: frozenset[TopicPartition]) -> None:
        """The consumer reads ``partitions`` now; refused while a revocation is pending."""
        if self.owned - self.target:
            raise RuntimeError(
                f"cannot acquire {sorted(partitions)} while {sorted(self.owned - self.target)} await revocation"
            )
        unexpected = partitions - self.target
        if unexpected:
            raise RuntimeError(f"{sorted(unexpected)} are not in the target assignment")
        self.owned |= partitions

    def fenced(self) -> frozenset[TopicPartition]:
        """The coordinator no longer knows this membership: lose every partition, rejoin with epoch 0."""
        lost = self.owned
        self.owned = frozenset()
        self.target = frozenset()
        self.member_epoch = JOIN_EPOCH
        return lost

    def left(self) -> frozenset[TopicPartition]:
        """After leaving (``unsubscribe``/``close``): no subscription, nothing owned."""
        lost = self.fenced()
        self.subscription = None
        return lost
