"""JSON shapes of consumer groups, members, offsets and lags (REST Proxy v3 names where they exist)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.groups.assignors import TopicPartition, grouped_by_topic

if TYPE_CHECKING:
    from broker.groups.lag import LagRow
    from broker.groups.membership import Member
    from broker.groups.shard import GroupState
    from broker.server.host import HttpHost


def groups_path(node: HttpHost, group_id: str | None = None) -> str:
    base = f"/v3/clusters/{node.cluster_id}/consumer-groups"
    return base if group_id is None else f"{base}/{group_id}"


def _related(node: HttpHost, path: str) -> dict[str, str]:
    return {"related": f"{node.advertised_url}{path}"}


def partitions_by_topic(partitions: set[TopicPartition] | frozenset[TopicPartition]) -> list[dict[str, Any]]:
    """``[{"topic": t, "partitions": [0, 2]}]``: the heartbeat's assignment shape (KIP-848 TopicPartitions)."""
    return [{"topic": topic, "partitions": numbers} for topic, numbers in grouped_by_topic(partitions).items()]


def group_body(node: HttpHost, state: GroupState) -> dict[str, Any]:
    """A group as the HTTP API shows it; a group of Kafka clients (classic protocol) shows its
    classic state, members, chosen assignor and generation (as ``group_epoch`` and
    ``assignment_epoch``: the classic protocol has one counter for both)."""
    membership = state.membership
    path = groups_path(node, membership.group_id)
    classic = state.classic if state.classic_members else None
    return {
        "kind": "KafkaConsumerGroup",
        "metadata": {"self": f"{node.advertised_url}{path}"},
        "cluster_id": node.cluster_id,
        "consumer_group_id": membership.group_id,
        "is_simple": not membership.members and classic is None,
        "partition_assignor": membership.assignor if classic is None else classic.protocol_name or "",
        "state": membership.state if classic is None else classic.state,
        "group_epoch": membership.group_epoch if classic is None else classic.generation,
        "assignment_epoch": membership.assignment_epoch if classic is None else classic.generation,
        "members_count": len(membership.members) if classic is None else len(classic.members),
        "committed_partitions": len(state.positions()),
        "coordinator_id": node.node_id,
        "coordinator": _related(node, f"/v3/clusters/{node.cluster_id}/brokers/{node.node_id}"),
        "consumers": _related(node, f"{path}/consumers"),
        "lag_summary": _related(node, f"{path}/lag-summary"),
    }


def member_body(node: HttpHost, group_id: str, member: Member) -> dict[str, Any]:
    subscription = member.subscription
    return {
        "kind": "KafkaConsumer",
        "metadata": {"self": f"{node.advertised_url}{groups_path(node, group_id)}/consumers/{member.member_id}"},
        "cluster_id": node.cluster_id,
        "consumer_group_id": group_id,
        "consumer_id": member.member_id,
        "client_id": member.client_id,
        "member_epoch": member.member_epoch,
        "subscribed_topics": sorted(subscription.topics) if subscription.topics is not None else None,
        "subscribed_topic_regex": subscription.regex,
        "assignments": [{"topic_name": t, "partition_id": p} for t, p in sorted(member.assigned)],
        "revoking": [{"topic_name": t, "partition_id": p} for t, p in sorted(member.revoking)],
        "last_heartbeat_ms": member.last_heartbeat_ms,
        "session_timeout_ms": member.session_timeout_ms,
    }


def offsets_body(node: HttpHost, state: GroupState, topic: str | None) -> dict[str, Any]:
    group_id = state.membership.group_id
    data = [
        {
            "topic_name": t,
            "partition_id": p,
            "offset": committed.offset,
            "metadata": committed.metadata,
            "commit_timestamp_ms": committed.commit_timestamp_ms,
        }
        for (t, p), committed in sorted(state.positions().items())
        if topic is None or t == topic
    ]
    return {
        "kind": "KafkaConsumerGroupOffsets",
        "metadata": {"self": f"{node.advertised_url}{groups_path(node, group_id)}/offsets"},
        "consumer_group_id": group_id,
        "data": data,
    }


def lag_body(node: HttpHost, group_id: str, row: LagRow) -> dict[str, Any]:
    path = f"{groups_path(node, group_id)}/lags/{row.topic_name}/partitions/{row.partition_id}"
    return {
        "kind": "KafkaConsumerLag",
        "metadata": {"self": f"{node.advertised_url}{path}"},
        "cluster_id": node.cluster_id,
        "consumer_group_id": group_id,
        **row.to_body(),
    }
