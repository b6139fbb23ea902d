"""Consumer-group members driven from a test, over a harness ``Cluster``.

A member heartbeats through a broker of its own (so forwarding to the coordinator is
exercised) and behaves as KIP-848 asks: it echoes what it owns and drops a revoked
partition at once. "Stopping" a member means it stops heartbeating, which is exactly
what the coordinator sees of a SIGKILLed consumer.
"""

from __future__ import annotations

import time
from typing import Any

from tests.support.cluster import Cluster

SESSION_TIMEOUT_MS = 1500
OFFSETS_PARTITIONS = 5
RETRIABLE_STATUSES = (421, 503, 504)
"""What a group call answers while its coordinator moves or loads the group: asked again, as a client does."""

Owned = frozenset[tuple[str, int]]


def group_call(
    cluster: Cluster,
    method: str,
    path: str,
    body: Any = None,
    via: int | None = None,
    timeout_s: float = 20.0,
) -> tuple[int, Any]:
    """``cluster.v3`` asked again while the answer is retriable or the broker unreachable.

    Gives up (naming the call) after ``timeout_s``: a coordinator that never settles is a failure.
    """

    def answered() -> tuple[int, Any] | None:
        status, answer = cluster.v3(method, path, body, via=via)
        return None if status in RETRIABLE_STATUSES else (status, answer)

    return cluster.wait_until(answered, f"{method} {path} answered without {RETRIABLE_STATUSES}", timeout_s)


def group_path(group_id: str, suffix: str = "") -> str:
    return f"/consumer-groups/{group_id}{suffix}"


def high_watermarks(cluster: Cluster, topic: str) -> dict[int, int]:
    return {p: state.high_watermark for p, state in cluster.partitions(topic).items()}


class Member:
    """A well-behaved KIP-848 member reaching the group through broker ``via``."""

    def __init__(self, cluster: Cluster, group_id: str, member_id: str, topics: list[str], via: int) -> None:
        self.cluster, self.group_id, self.member_id, self.topics, self.via = cluster, group_id, member_id, topics, via
        self.epoch = 0
        self.owned: Owned = frozenset()
        self.last_heartbeat = 0.0

    def beat(self) -> bool:
        """One heartbeat; whether the coordinator answered it (a miss is what a member retries next beat)."""
        body: dict[str, Any] = {
            "member_epoch": self.epoch,
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "client_id": f"client-{self.member_id}",
            "owned_partitions": grouped(self.owned),
        }
        if self.epoch == 0:
            body["subscribed_topics"] = self.topics
        path = group_path(self.group_id, f"/consumers/{self.member_id}:heartbeat")
        try:
            status, answer = self.cluster.v3("POST", path, body, via=self.via, timeout_s=3)
        except OSError:
            return False
        if status == 200:
            self.epoch = answer["member_epoch"]
            self.owned = frozenset((a["topic"], p) for a in answer["assignment"] for p in a["partitions"])
            self.last_heartbeat = time.monotonic()
            return True
        if answer.get("error") in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH"):
            self.epoch, self.owned = 0, frozenset()
        return False

    def commit(self, offsets: dict[tuple[str, int], int], epoch: int | None = None) -> tuple[int, Any]:
        body = {
            "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch,
            "offsets": [{"topic_name": t, "partition_id": p, "offset": o} for (t, p), o in offsets.items()],
        }
        return group_call(self.cluster, "POST", group_path(self.group_id, "/offsets"), body, via=self.via)


def grouped(owned: Owned) -> list[dict[str, Any]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(owned):
        topics.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": p} for t, p in topics.items()]


def beat_round(members: list[Member], owners_seen: list[list[tuple[str, int]]]) -> None:
    """Every member beats once; no partition may then have two owners."""
    for member in members:
        member.beat()
    owned = [tp for member in members for tp in member.owned]
    assert len(owned) == len(set(owned)), f"a partition owned twice: {[(m.member_id, m.owned) for m in members]}"
    owners_seen.append(owned)


def settle(members: list[Member], all_partitions: set[tuple[str, int]], timeout_s: float = 10.0) -> None:
    """Beat until the members own every partition between them, balanced to within one."""
    seen: list[list[tuple[str, int]]] = []

    def settled() -> bool:
        beat_round(members, seen)
        union: set[tuple[str, int]] = set().union(*(m.owned for m in members))
        sizes = sorted(len(m.owned) for m in members)
        return union == all_partitions and sizes[-1] - sizes[0] <= 1

    members[0].cluster.wait_until(
        settled, f"group settled over {sorted(all_partitions)}: {[m.member_id for m in members]}", timeout_s
    )
