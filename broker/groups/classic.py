"""One group of Kafka's classic group protocol (JoinGroup/SyncGroup/Heartbeat/LeaveGroup), pure.

The broker does not assign partitions here: it elects a *leader* member, hands it
every member's subscription metadata, and relays the assignment the leader computed
(client-side assignment). Time enters as ``now_ms``; nothing here waits. A JoinGroup
or a follower's SyncGroup that cannot be answered yet is *pending*: the driver asks
again (``join_result``, ``sync``) after every change until it can be answered.

States (Kafka's): ``Empty`` (no members), ``PreparingRebalance`` (waiting for every
member to rejoin), ``CompletingRebalance`` (joined; waiting for the leader's
SyncGroup), ``Stable``.

Invariants:

- the generation rises exactly when a rebalance completes, and every member of a
  generation received that generation's JoinGroup answer: a request naming another
  generation is ``ILLEGAL_GENERATION``, a member the group does not know is
  ``UNKNOWN_MEMBER_ID``, so a member that missed a rebalance can neither commit
  nor heartbeat its old partitions;
- an assignment is handed out only in ``Stable`` and only the current generation's
  (assignments are cleared when a rebalance starts), so two members never both hold
  assignments from different generations;
- a rebalance ends when every member has rejoined or at the rebalance deadline (the
  largest rebalance timeout of the members), when members that did not rejoin are
  removed; members silent past their session timeout are removed, unless they have
  a JoinGroup or SyncGroup pending (it is their heartbeat while the group waits for
  the others or the leader).

Static membership (``group.instance.id``) is not supported: the driver refuses it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import structlog

from broker.groups.consumer_protocol import subscribed_topics

log = structlog.get_logger(__name__)

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
NO_GENERATION = -1
CONSUMER_PROTOCOL_TYPE = "consumer"
"""The protocol type of Kafka's consumers; Kafka Connect's workers and others use their own."""


class ClassicGroupError(Exception):
    """A classic-protocol refusal; ``name`` is Kafka's error name (``ILLEGAL_GENERATION``...)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


@dataclass(frozen=True, slots=True)
class JoinRequest:
    member_id: str
    """Empty for a member joining for the first time: the group names it."""
    client_id: str
    client_host: str
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    """(assignor name, subscription metadata), in the member's order of preference."""
    session_timeout_ms: int
    rebalance_timeout_ms: int


@dataclass(frozen=True, slots=True)
class JoinResult:
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    member_id: str
    members: tuple[tuple[str, bytes], ...]
    """(member id, metadata of the chosen protocol) for the leader; empty for the others."""


@dataclass(slots=True)
class ClassicMember:
    member_id: str
    client_id: str
    client_host: str
    protocols: tuple[tuple[str, bytes], ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    last_seen_ms: int
    joining: bool = False
    """A JoinGroup of this member waits for the rebalance to complete."""
    syncing: bool = False
    """A SyncGroup of this member waits for the leader's assignments."""
    assignment: bytes = b""

    def metadata(self, protocol: str | None) -> bytes:
        return next((data for name, data in self.protocols if name == protocol), b"")


class ClassicGroup:
    """See the module docstring."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = EMPTY
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader: str | None = None
        self.members: dict[str, ClassicMember] = {}
        self.rebalance_deadline_ms: int | None = None
        self._join_results: dict[str, JoinResult] = {}
        self._log = log.bind(group_id=group_id)

    def subscribed_topics(self) -> frozenset[str] | None:
        """The topics the members subscribe to (``consumer_protocol``); None when any subscription is unknown.

        Unknown for another protocol type than ``consumer`` and for metadata that does not read.
        """
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None if self.members else frozenset()
        topics: set[str] = set()
        for member in self.members.values():
            found = subscribed_topics(member.metadata(self.protocol_name))
            if found is None:
                return None
            topics |= found
        return frozenset(topics)

    # ------------------------------------------------------------ join

    def join(self, request: JoinRequest, now_ms: int) -> str:
        """Register the member's JoinGroup; return its member id. Its answer comes from ``join_result``."""
        self._check_protocols(request)
        member = self.members.get(request.member_id) if request.member_id else None
        if request.member_id and member is None:
            raise ClassicGroupError(
                "UNKNOWN_MEMBER_ID", f"member {request.member_id!r} is not in group {self.group_id!r}; join anew"
            )
        if member is None:
            member_id = f"{request.client_id or 'member'}-{uuid.uuid4()}"
            member = ClassicMember(
                member_id,
                request.client_id,
                request.client_host,
                request.protocols,
                request.session_timeout_ms,
                request.rebalance_timeout_ms,
                now_ms,
            )
            self.members[member_id] = member
            self._log.info("classic.member_joined", member_id=member_id, members=len(self.members))
        member.protocols = request.protocols
        member.session_timeout_ms = request.session_timeout_ms
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.last_seen_ms = now_ms
        member.joining = True
        self.protocol_type = request.protocol_type
        self._join_results.pop(member.member_id, None)
        if self.state != PREPARING_REBALANCE:
            self._prepare_rebalance(now_ms, "member_joined")
        self._maybe_complete_join()
        return member.member_id

    def join_result(self, member_id: str) -> JoinResult | None:
        """The member's JoinGroup answer once the rebalance completed; None while it is pending."""
        if member_id not in self.members:
            raise ClassicGroupError(
                "UNKNOWN_MEMBER_ID", f"member {member_id!r} was removed from group {self.group_id!r} while joining"
            )
        return self._join_results.pop(member_id, None)

    def _check_protocols(self, request: JoinRequest) -> None:
        if not request.protocol_type or not request.protocols:
            raise ClassicGroupError("INCONSISTENT_GROUP_PROTOCOL", "a JoinGroup needs a protocol type and protocols")
        others = [m for m in self.members.values() if m.member_id != request.member_id]
        if not others:
            return
        if request.protocol_type != self.protocol_type:
            raise ClassicGroupError(
                "INCONSISTENT_GROUP_PROTOCOL",
                f"group {self.group_id!r} uses protocol type {self.protocol_type!r}, not {request.protocol_type!r}",
            )
        if not self._common_protocols([request.protocols, *(m.protocols for m in others)]):
            raise ClassicGroupError(
                "INCONSISTENT_GROUP_PROTOCOL",
                f"none of {[name for name, _ in request.protocols]} is supported by every member of {self.group_id!r}",
            )

    @staticmethod
    def _common_protocols(all_protocols: list[tuple[tuple[str, bytes], ...]]) -> set[str]:
        common = {name for name, _ in all_protocols[0]}
        for protocols in all_protocols[1:]:
            common &= {name for name, _ in protocols}
        return common

    def _prepare_rebalance(self, now_ms: int, reason: str) -> None:
        self.state = PREPARING_REBALANCE
        self.rebalance_deadline_ms = now_ms + max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
        for member in self.members.values():
            member.assignment = b""
            member.syncing = False
        self._log.info("classic.rebalance_started", generation=self.generation, reason=reason)

    def _maybe_complete_join(self) -> None:
        if self.state == PREPARING_REBALANCE and all(m.joining for m in self.members.values()):
            self._complete_join()

    def _complete_join(self) -> None:
        """Start the next generation with the members that rejoined."""
        self.generation += 1
        self.rebalance_deadline_ms = None
        self._join_results.clear()
        if not self.members:
            self.state, self.leader, self.protocol_name = EMPTY, None, None
            self._log.info("classic.generation", generation=self.generation, members=0)
            return
        self.state = COMPLETING_REBALANCE
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self.protocol_name = self._vote()
        everyone = tuple((m.member_id, m.metadata(self.protocol_name)) for m in self.members.values())
        for member in self.members.values():
            member.joining = False
            self._join_results[member.member_id] = JoinResult(
                self.generation,
                self.protocol_type,
                self.protocol_name,
                self.leader,
                member.member_id,
                everyone if member.member_id == self.leader else (),
            )
        self._log.info(
            "classic.generation",
            generation=self.generation,
            members=len(self.members),
            leader=self.leader,
            protocol=self.protocol_name,
        )

    def _vote(self) -> str:
        """Kafka's choice: each member votes for its most preferred protocol all support; most votes wins."""
        common = self._common_protocols([m.protocols for m in self.members.values()])
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(name for name, _ in member.protocols if name in common)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    # ------------------------------------------------------------ sync, heartbeat

    def _member_of_generation(self, member_id: str, generation: int, now_ms: int) -> ClassicMember:
        member = self.members.get(member_id)
        if member is None:
            raise ClassicGroupError("UNKNOWN_MEMBER_ID", f"member {member_id!r} is not in group {self.group_id!r}")
        if generation != self.generation:
            raise ClassicGroupError(
                "ILLEGAL_GENERATION",
                f"generation {generation} is not group {self.group_id!r}'s current generation {self.generation}",
            )
        member.last_seen_ms = now_ms
        return member

    def sync(
        self, member_id: str, generation: int, assignments: Mapping[str, bytes] | None, now_ms: int
    ) -> bytes | None:
        """The member's assignment, or None while the leader has not sent the generation's assignments.

        ``assignments`` is what the leader sends (ignored from anyone else); members it
        leaves out get an empty assignment, as in Kafka.
        """
        member = self._member_of_generation(member_id, generation, now_ms)
        if self.state == PREPARING_REBALANCE:
            raise ClassicGroupError("REBALANCE_IN_PROGRESS", f"group {self.group_id!r} is rebalancing; rejoin")
        if self.state == COMPLETING_REBALANCE:
            if member_id != self.leader or assignments is None:
                member.syncing = True
                return None
            for other in self.members.values():
                other.assignment = assignments.get(other.member_id, b"")
                other.syncing = False
            self.state = STABLE
            self._log.info("classic.stable", generation=self.generation, members=len(self.members))
        return member.assignment

    def heartbeat(self, member_id: str, generation: int, now_ms: int) -> None:
        self._member_of_generation(member_id, generation, now_ms)
        if self.state == PREPARING_REBALANCE:
            raise ClassicGroupError("REBALANCE_IN_PROGRESS", f"group {self.group_id!r} is rebalancing; rejoin")

    # ------------------------------------------------------------ leaving, expiry

    def leave(self, member_id: str, now_ms: int) -> None:
        if member_id not in self.members:
            raise ClassicGroupError("UNKNOWN_MEMBER_ID", f"member {member_id!r} is not in group {self.group_id!r}")
        self._remove([member_id], "left", now_ms)

    def _remove(self, member_ids: list[str], reason: str, now_ms: int) -> None:
        for member_id in member_ids:
            del self.members[member_id]
            self._join_results.pop(member_id, None)
            self._log.info("classic.member_removed", member_id=member_id, reason=reason, members=len(self.members))
        if self.state != PREPARING_REBALANCE:
            self._prepare_rebalance(now_ms, reason)
        self._maybe_complete_join()

    def expire(self, now_ms: int) -> list[str]:
        """Remove members past their session timeout, and laggards at the rebalance deadline; their ids."""
        silent = [
            m.member_id
            for m in self.members.values()
            if not m.joining and not m.syncing and now_ms - m.last_seen_ms > m.session_timeout_ms
        ]
        if silent:
            self._remove(silent, "session_timeout", now_ms)
        late: list[str] = []
        deadline = self.rebalance_deadline_ms
        if self.state == PREPARING_REBALANCE and deadline is not None and now_ms >= deadline:
            late = [m.member_id for m in self.members.values() if not m.joining]
            for member_id in late:
                del self.members[member_id]
                self._log.info("classic.member_removed", member_id=member_id, reason="rebalance_timeout")
            self._complete_join()
        return silent + late

    # ------------------------------------------------------------ commits

    def validate_commit(self, member_id: str, generation: int, now_ms: int) -> None:
        """Kafka's rule: a member of the current generation commits (also while the next rebalance
        is being prepared, so it can commit before giving partitions up); without a member id
        and generation only while the group has no members."""
        if not member_id and generation < 0:
            if self.members:
                raise ClassicGroupError(
                    "UNKNOWN_MEMBER_ID",
                    f"group {self.group_id!r} has {len(self.members)} active member(s); commit as one of them",
                )
            return
        self._member_of_generation(member_id, generation, now_ms)
        if self.state == COMPLETING_REBALANCE:
            raise ClassicGroupError("REBALANCE_IN_PROGRESS", f"group {self.group_id!r} is completing a rebalance")
