"""``GroupClient``: the consumer-group calls of the broker's public API (REST Proxy v3 paths).

Each is answered by the group's coordinator (the leader of the group's
``__consumer_offsets`` partition), reached through ``CoordinatedCalls``.

Importing ``broker.errors.groups`` registers the coordinator's error classes, so broker
answers are rebuilt as ``UnknownMemberId``, ``FencedMemberEpoch`` ... by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from broker.client.coordinated import CoordinatedCalls
from broker.client.http import ClusterClient
from broker.client.types import OffsetAndMetadata, TopicPartition
from broker.errors.groups import GroupIdNotFound


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    """The coordinator's answer: the member's epoch and every partition it may own now."""

    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: frozenset[TopicPartition]


def _assignment(items: list[dict[str, Any]]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(item["topic"], int(p)) for item in items for p in item.get("partitions", ()))


def partitions_body(partitions: frozenset[TopicPartition] | set[TopicPartition]) -> list[dict[str, Any]]:
    """``[{"topic": t, "partitions": [...]}]``, the heartbeat's ``owned_partitions`` shape."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        grouped.setdefault(topic, []).append(partition)
    return [{"topic": topic, "partitions": partitions_} for topic, partitions_ in grouped.items()]


class GroupClient:
    """Group membership and offsets over one ``ClusterClient`` (same session, same broker list)."""

    def __init__(self, client: ClusterClient) -> None:
        self._calls = CoordinatedCalls(client)
        self._call = self._calls.call

    async def _group_path(self, group_id: str, suffix: str = "") -> str:
        return await self._calls.cluster_path(f"/consumer-groups/{group_id}{suffix}")

    async def heartbeat(self, group_id: str, member_id: str, body: dict[str, Any]) -> HeartbeatAnswer:
        path = await self._group_path(group_id, f"/consumers/{member_id}:heartbeat")
        answer = await self._call("POST", path, body)
        return HeartbeatAnswer(
            member_id=str(answer.get("member_id", member_id)),
            member_epoch=int(answer["member_epoch"]),
            heartbeat_interval_ms=int(answer.get("heartbeat_interval_ms", 0)),
            assignment=_assignment(answer.get("assignment", [])),
        )

    async def commit(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
        member_id: str | None = None,
        member_epoch: int | None = None,
        transaction: Mapping[str, Any] | None = None,
    ) -> None:
        """Commit ``offsets`` (acks=all on the broker); a member commits with its current epoch.

        ``transaction`` (``transactional_id``, ``producer_id``, ``producer_epoch``) commits them inside that
        producer's transaction (TxnOffsetCommit): they apply when it commits.
        """
        entries = [(tp, e if isinstance(e, OffsetAndMetadata) else OffsetAndMetadata(e)) for tp, e in offsets.items()]
        body: dict[str, Any] = {
            "offsets": [
                {"topic_name": tp.topic, "partition_id": tp.partition, "offset": e.offset, "metadata": e.metadata}
                for tp, e in sorted(entries)
            ]
        }
        if member_id is not None:
            body["member_id"] = member_id
            body["member_epoch"] = member_epoch
        body.update(transaction or {})
        await self._call("POST", await self._group_path(group_id, "/offsets"), body)

    async def committed(self, group_id: str, topic: str | None = None) -> dict[TopicPartition, int]:
        """The group's committed offsets (of ``topic`` only, if named); empty for an unknown group."""
        return {tp: entry.offset for tp, entry in (await self.committed_with_metadata(group_id, topic)).items()}

    async def committed_with_metadata(
        self, group_id: str, topic: str | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """``committed``, with the metadata committed beside each offset."""
        params = {"topic": topic} if topic is not None else None
        try:
            answer = await self._call("GET", await self._group_path(group_id, "/offsets"), params=params)
        except GroupIdNotFound:
            return {}
        return {
            TopicPartition(entry["topic_name"], int(entry["partition_id"])): OffsetAndMetadata(
                int(entry["offset"]), str(entry.get("metadata") or "")
            )
            for entry in answer.get("data", [])
        }
