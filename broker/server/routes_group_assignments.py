"""A consumer group member's assignment, one row per partition (REST Proxy's consumer assignments).

Answered on the group's coordinator from the membership state it keeps (the same
state ``GET …/consumers/{c}`` shows), forwarded there like every group request. The
rows are the partitions the member owns now (``Member.assigned``); partitions it is
still revoking are not its assignment any more. Each row links to its partition and
to the group's lag for it. Rows name topics, so a listing keeps only the topics the
principal may DESCRIBE, as the lag listings do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from broker.errors import NotFound
from broker.errors.groups import GroupIdNotFound, UnknownMemberId
from broker.server.admin_bodies import ConsumerAssignmentData, ConsumerAssignmentDataList, list_of, topic_path, url
from broker.server.api_routes import CLUSTER, JSON, PARTITION, TOPIC, Operation, Reply, RouteTable
from broker.server.authorization import describable_topics
from broker.server.group_bodies import groups_path
from broker.server.params import node_of, partition_param
from broker.server.routes_groups import GROUP, GROUP_ID, MEMBER, TAGS, coordinated

if TYPE_CHECKING:
    from broker.groups.membership import Member
    from broker.groups.shard import OffsetsShard
    from broker.server.host import HttpHost

ASSIGNMENTS = GROUP + "/consumers/{consumer_id}/assignments"
routes = RouteTable()


def _member(shard: OffsetsShard, group_id: str, member_id: str) -> Member:
    state = shard.existing_group(group_id)
    if state is None:
        raise GroupIdNotFound(f"consumer group {group_id!r} does not exist (no members, no committed offsets)")
    member = state.membership.members.get(member_id)
    if member is None:
        raise UnknownMemberId(f"member {member_id!r} is not in group {group_id!r}", member_id=member_id)
    return member


def _assignment_body(node: HttpHost, group_id: str, member_id: str, topic: str, partition: int) -> dict[str, Any]:
    group = groups_path(node, group_id)
    return {
        "kind": "KafkaConsumerAssignment",
        "metadata": {"self": url(node, f"{group}/consumers/{member_id}/assignments/{topic}/partitions/{partition}")},
        "cluster_id": node.cluster_id,
        "consumer_group_id": group_id,
        "consumer_id": member_id,
        "topic_name": topic,
        "partition_id": partition,
        "partition": {"related": url(node, f"{topic_path(node, topic)}/partitions/{partition}")},
        "lag": {"related": url(node, f"{group}/lags/{topic}/partitions/{partition}")},
    }


@routes.get(
    ASSIGNMENTS,
    Operation(
        "The partitions a member owns (only topics the principal may DESCRIBE)",
        (Reply(200, "assignments", {JSON: ConsumerAssignmentDataList}),),
        (CLUSTER, GROUP_ID, MEMBER),
        tags=TAGS,
    ),
)
@coordinated
async def list_assignments(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = node_of(request)
    member_id = request.match_info["consumer_id"]
    visible = describable_topics(request)
    items = [
        _assignment_body(node, group_id, member_id, topic, partition)
        for topic, partition in sorted(_member(shard, group_id, member_id).assigned)
        if visible(topic)
    ]
    path = f"{groups_path(node, group_id)}/consumers/{member_id}/assignments"
    return web.json_response(list_of("KafkaConsumerAssignmentList", node, path, items))


@routes.get(
    ASSIGNMENTS + "/{topic_name}/partitions/{partition_id}",
    Operation(
        "One partition of a member's assignment; 404 when the member does not own it",
        (Reply(200, "assignment", {JSON: ConsumerAssignmentData}),),
        (CLUSTER, GROUP_ID, MEMBER, TOPIC, PARTITION),
        tags=TAGS,
    ),
)
@coordinated
async def get_assignment(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = node_of(request)
    member_id, topic = request.match_info["consumer_id"], request.match_info["topic_name"]
    partition = partition_param(request)
    if (topic, partition) not in _member(shard, group_id, member_id).assigned:
        raise NotFound(
            f"member {member_id!r} of group {group_id!r} is not assigned {topic}-{partition}",
            topic_name=topic,
            partition_id=partition,
        )
    return web.json_response(_assignment_body(node, group_id, member_id, topic, partition))
