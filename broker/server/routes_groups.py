"""Consumer groups over HTTP: KIP-848 heartbeats, committed offsets, lag (REST Proxy v3 paths).

Every per-group request is answered by the group's coordinator (the leader of its
``__consumer_offsets`` partition); any broker accepts it and forwards it there
(``broker.server.coordinator_forwarding``).

Heartbeat: ``POST …/consumer-groups/{g}/consumers/{member}:heartbeat`` with
``{member_epoch, subscribed_topics | subscribed_topic_regex, owned_partitions?,
rebalance_timeout_ms?, session_timeout_ms?, client_id?, server_assignor?}``; member
epoch 0 joins, -1 leaves. The answer carries the member's epoch and the partitions it
owns now. A member acknowledges a revocation by sending ``owned_partitions`` without
the revoked partitions (see ``broker.groups.membership``).

Groups, members, lags and the lag summary answer the REST Proxy's shapes
(``*_resource`` below, around ``broker.server.group_bodies``): a group's ``state`` in the spec's
spelling (``STABLE``), its ``type`` (``CONSUMER`` for the HTTP/KIP-848 protocol,
``CLASSIC`` for a group of Kafka clients) and ``is_mixed_consumer_group``; a member's
``assignments`` is a link, its partitions inline as ``assigned_partitions``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from broker.errors import InvalidRequest
from broker.errors.groups import GroupIdNotFound, UnknownMemberId
from broker.groups.lag import LagRow, lag_summary
from broker.groups.membership import LEAVE_EPOCH, HeartbeatRequest, Member, Subscription
from broker.groups.shard import GroupState, OffsetsShard
from broker.security.acl import AclOperation, Resource
from broker.server.api_routes import (
    CLUSTER,
    JSON,
    PARTITION,
    TOPIC,
    Body,
    Operation,
    Reply,
    RouteTable,
    link,
    path_param,
    query_param,
)
from broker.server.authorization import describable_topics, may, require
from broker.server.coordinator_forwarding import forward_to_coordinator, forwarded, from_every_coordinator
from broker.server.group_bodies import group_body, groups_path, lag_body, member_body, offsets_body, partitions_by_topic
from broker.server.group_responses import (
    Consumer,
    ConsumerGroup,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupLagSummary,
    ConsumerGroupOffsets,
    ConsumerLag,
)
from broker.server.params import INT64_MAX, NODE_KEY, JsonInt, node_of, partition_param, read_model
from broker.server.partition_ids import PartitionId
from broker.server.resources import list_body, metadata, related
from broker.server.responses import Error, ResourceList
from broker.server.routes_internal import internal

if TYPE_CHECKING:
    from broker.server.host import HttpHost

GROUP = "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}"
MIN_HEARTBEAT_INTERVAL_MS = 100
MAX_HEARTBEAT_INTERVAL_MS = 5000

GROUP_ID = path_param("consumer_group_id", {"type": "string"}, "consumer group id")
MEMBER = path_param("consumer_id", {"type": "string"}, "member id, chosen by the member (stable across its heartbeats)")
TAGS = ("consumer-groups",)
routes = RouteTable()


def group_operation(summary: str, reply: Reply, *params: Any, body: type[BaseModel] | None = None) -> Operation:
    """An operation on one group (its path has the cluster and the group id)."""
    return Operation(summary, (reply,), (CLUSTER, GROUP_ID, *params), Body({JSON: body}) if body else None, tags=TAGS)


def _member_links() -> dict[str, Any]:
    """From a heartbeat's answer to the calls that take the member and its group."""
    member = {
        "cluster_id": "$request.path.cluster_id",
        "consumer_group_id": "$request.path.consumer_group_id",
        "consumer_id": "$response.body#/member_id",
    }
    group = {key: member[key] for key in ("cluster_id", "consumer_group_id")}
    return {
        "DescribeMember": link(GROUP + "/consumers/{consumer_id}", "get", **member),
        "LeaveGroup": link(GROUP + "/consumers/{consumer_id}", "delete", **member),
        "DescribeGroup": link(GROUP, "get", **group),
        "GroupLags": link(GROUP + "/lags", "get", **group),
    }


class TopicPartitions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topic: str
    partitions: list[PartitionId] = Field(default_factory=list)


class HeartbeatBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    member_epoch: JsonInt = Field(ge=-1, description="0 joins, -1 leaves, else current")
    subscribed_topics: list[str] | None = Field(None, description="required when joining (or regex)")
    subscribed_topic_regex: str | None = Field(
        None, description="full-match regex over topic names", json_schema_extra={"format": "regex"}
    )
    owned_partitions: list[TopicPartitions] | None = Field(
        None, description="what the member owns now; omitting a revoked partition releases it"
    )
    rebalance_timeout_ms: JsonInt = Field(30_000, ge=1, le=3_600_000, description="time allowed to revoke")
    session_timeout_ms: JsonInt = Field(10_000, ge=100, le=3_600_000, description="expelled after this silence")
    client_id: str = ""
    server_assignor: Literal["uniform", "range"] = "uniform"
    isolation_level: Literal["read_uncommitted", "read_committed"] | None = Field(
        None, description="what the member reads up to; the group's lag ends at the LSO when it reads committed"
    )

    def subscription(self) -> Subscription | None:
        if self.subscribed_topic_regex is not None:
            try:
                re.compile(self.subscribed_topic_regex)
            except re.error as error:
                raise InvalidRequest(f"subscribed_topic_regex is not a valid regex: {error}") from None
            return Subscription(regex=self.subscribed_topic_regex)
        if self.subscribed_topics is not None:
            return Subscription(topics=frozenset(self.subscribed_topics))
        return None

    def owned(self) -> frozenset[tuple[str, int]] | None:
        if self.owned_partitions is None:
            return None
        return frozenset((item.topic, p) for item in self.owned_partitions for p in item.partitions)


class OffsetEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topic_name: str
    partition_id: PartitionId
    offset: JsonInt = Field(
        ge=0,
        le=INT64_MAX,
        description="the next offset to consume; above the partition's high watermark it is refused: 416 "
        "OFFSET_OUT_OF_RANGE, or 503 OFFSET_NOT_AVAILABLE (retriable) while the leader holds it but its high "
        "watermark has not reached it",
    )
    metadata: str = ""


NO_PRODUCER = -1
"""Kafka's "no producer id" (and epoch): a commit outside any transaction."""


class CommitBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    member_id: str | None = Field(None, description="omit for a group without active members")
    member_epoch: JsonInt | None = Field(None, description="the member's current epoch (fencing)")
    transactional_id: str | None = Field(
        None,
        min_length=1,
        description="commit inside this producer's transaction (TxnOffsetCommit, after POST "
        "…/transactions/{id}/consumer-groups): the offsets apply when it commits, and are dropped if it aborts",
    )
    producer_id: JsonInt = Field(
        NO_PRODUCER, ge=NO_PRODUCER, le=INT64_MAX, description="the transactional producer's id (-1: none)"
    )
    producer_epoch: JsonInt = Field(
        NO_PRODUCER, ge=NO_PRODUCER, le=32767, description="the transactional producer's epoch (-1: none)"
    )
    offsets: list[OffsetEntry]


Handler = Callable[[web.Request, OffsetsShard, str], Awaitable[web.StreamResponse]]


def coordinated(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Run ``handler`` on the group's coordinator: here if it is this broker, else forwarded."""

    async def route(request: web.Request) -> web.StreamResponse:
        node = node_of(request)
        group_id = request.match_info["consumer_group_id"]
        target = await node.groups.route(group_id, forwarded=forwarded(request))
        if isinstance(target, str):
            return await forward_to_coordinator(request, target, "group coordinator")
        return await handler(request, target, group_id)

    return route


SPEC_GROUP_STATES = {
    "Empty": "EMPTY",
    "Assigning": "ASSIGNING",
    "Reconciling": "RECONCILING",
    "Stable": "STABLE",
    "PreparingRebalance": "PREPARING_REBALANCE",
    "CompletingRebalance": "COMPLETING_REBALANCE",
    "Dead": "DEAD",
}
"""Kafka's group states as the REST Proxy spells them; any other is ``UNKNOWN``."""


def _crn(group_id: str, *names: str) -> tuple[str, ...]:
    return (f"consumer-group={group_id}", *names)


def group_resource(node: HttpHost, state: GroupState) -> dict[str, Any]:
    """A group of both protocols' members is a ``CONSUMER`` group with classic members, as Kafka 4 calls it mixed."""
    body = group_body(node, state)
    classic, consumer = bool(state.classic_members), bool(state.membership.members)
    group_id = body["consumer_group_id"]
    return {
        **body,
        "metadata": metadata(node, groups_path(node, group_id), *_crn(group_id)),
        "state": SPEC_GROUP_STATES.get(body["state"], "UNKNOWN"),
        "type": "CLASSIC" if classic and not consumer else "CONSUMER",
        "is_mixed_consumer_group": classic and consumer,
    }


def member_resource(node: HttpHost, group_id: str, member: Member) -> dict[str, Any]:
    body = member_body(node, group_id, member)
    path = f"{groups_path(node, group_id)}/consumers/{member.member_id}"
    return {
        **body,
        "metadata": metadata(node, path, *_crn(group_id, f"consumer={member.member_id}")),
        "instance_id": None,
        "assignments": related(node, f"{path}/assignments"),
        "assigned_partitions": body["assignments"],
    }


def lag_resource(node: HttpHost, group_id: str, row: LagRow) -> dict[str, Any]:
    path = f"{groups_path(node, group_id)}/lags/{row.topic_name}/partitions/{row.partition_id}"
    names = _crn(group_id, f"lag={row.topic_name}", f"partition={row.partition_id}")
    return {**lag_body(node, group_id, row), "metadata": metadata(node, path, *names)}


def lag_summary_resource(node: HttpHost, group_id: str, rows: list[LagRow]) -> dict[str, Any]:
    """The worst partition's links lead to its owner and the partition; with no owner (or no lag known),
    to the group's members and the cluster's topics."""
    summary = lag_summary(group_id, rows)
    group = groups_path(node, group_id)
    topics = f"/v3/clusters/{node.cluster_id}/topics"
    consumer, topic = summary["max_lag_consumer_id"], summary["max_lag_topic_name"]
    return {
        "kind": "KafkaConsumerGroupLagSummary",
        "metadata": metadata(node, f"{group}/lag-summary", *_crn(group_id, "lag-summary")),
        "cluster_id": node.cluster_id,
        **summary,
        "max_lag_consumer": related(node, f"{group}/consumers/{consumer}" if consumer else f"{group}/consumers"),
        "max_lag_partition": related(
            node, f"{topics}/{topic}/partitions/{summary['max_lag_partition_id']}" if topic else topics
        ),
    }


async def _visible_lag_rows(request: web.Request, shard: OffsetsShard, group_id: str) -> list[LagRow]:
    """The group's lag rows of the topics the principal may DESCRIBE: lag names topics, so it is filtered too."""
    visible = describable_topics(request)
    return [row for row in await node_of(request).groups.lag_rows(shard, group_id) if visible(row.topic_name)]


def _heartbeat_interval_ms(session_timeout_ms: int) -> int:
    return max(MIN_HEARTBEAT_INTERVAL_MS, min(MAX_HEARTBEAT_INTERVAL_MS, session_timeout_ms // 3))


@routes.post(
    GROUP + "/consumers/{consumer_id}:heartbeat",
    group_operation(
        "KIP-848 heartbeat: join (epoch 0), stay, acknowledge revocations, receive the assignment",
        Reply(
            200,
            "the member's epoch and the partitions it owns now",
            {JSON: ConsumerGroupHeartbeatResponse},
            links=_member_links(),
        ),
        MEMBER,
        body=HeartbeatBody,
    ),
)
@coordinated
async def heartbeat(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    body = await read_model(request, HeartbeatBody)
    for topic in body.subscribed_topics or ():
        require(request, AclOperation.DESCRIBE, Resource.topic(topic))
    member_id = request.match_info["consumer_id"]
    if body.member_epoch == LEAVE_EPOCH:
        node.groups.leave(shard, group_id, member_id)
        return web.json_response({"member_id": member_id, "member_epoch": LEAVE_EPOCH, "assignment": []})
    answer = node.groups.heartbeat(
        shard,
        group_id,
        HeartbeatRequest(
            member_id,
            body.member_epoch,
            body.subscription(),
            body.owned(),
            body.client_id,
            body.session_timeout_ms,
            body.rebalance_timeout_ms,
            None if body.isolation_level is None else body.isolation_level == "read_committed",
        ),
        body.server_assignor,
    )
    return web.json_response(
        {
            "kind": "KafkaConsumerGroupHeartbeat",
            "member_id": answer.member_id,
            "member_epoch": answer.member_epoch,
            "group_epoch": shard.group(group_id).membership.group_epoch,
            "heartbeat_interval_ms": _heartbeat_interval_ms(body.session_timeout_ms),
            "assignment": partitions_by_topic(answer.assignment),
        }
    )


@routes.delete(
    GROUP + "/consumers/{consumer_id:[^{}/:]+}",
    group_operation("Leave the group: the member's partitions are reassigned at once", Reply(204, "left"), MEMBER),
)
@coordinated
async def leave_group(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    request.app[NODE_KEY].groups.leave(shard, group_id, request.match_info["consumer_id"])
    return web.Response(status=204)


@routes.get(
    GROUP + "/consumers",
    group_operation(
        "List the group's members and their assignments", Reply(200, "members", {JSON: ResourceList[Consumer]})
    ),
)
@coordinated
async def list_members(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    state = shard.required_group(group_id)
    items = [member_resource(node, group_id, m) for _, m in sorted(state.membership.members.items())]
    return web.json_response(list_body("KafkaConsumerList", node, f"{groups_path(node, group_id)}/consumers", items))


@routes.get(
    GROUP + "/consumers/{consumer_id:[^{}/:]+}",
    group_operation("Describe one member", Reply(200, "member", {JSON: Consumer}), MEMBER),
)
@coordinated
async def get_member(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    member_id = request.match_info["consumer_id"]
    member = shard.required_group(group_id).membership.members.get(member_id)
    if member is None:
        raise UnknownMemberId(f"member {member_id!r} is not in group {group_id!r}", member_id=member_id)
    return web.json_response(member_resource(node, group_id, member))


@routes.get(
    GROUP,
    group_operation("Describe a consumer group (on its coordinator)", Reply(200, "group", {JSON: ConsumerGroup})),
)
@coordinated
async def get_group(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    return web.json_response(group_resource(request.app[NODE_KEY], shard.required_group(group_id)))


@routes.delete(
    GROUP,
    Operation(
        "Delete a group without active members and its committed offsets",
        (
            Reply(204, "deleted"),
            Reply(
                409,
                "NON_EMPTY_GROUP: the group has active members, nothing deleted (error_code 40912; 40913 when "
                "they use Kafka's classic group protocol)",
                {JSON: Error},
            ),
        ),
        (CLUSTER, GROUP_ID),
        tags=TAGS,
    ),
)
@coordinated
async def delete_group(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    shard.required_group(group_id)
    await request.app[NODE_KEY].groups.delete_group(shard, group_id)
    return web.Response(status=204)


@routes.post(
    GROUP + "/offsets",
    group_operation(
        "Commit offsets (acks=all to __consumer_offsets); fenced by member epoch",
        Reply(200, "the group's committed offsets after the commit", {JSON: ConsumerGroupOffsets}),
        body=CommitBody,
    ),
)
@coordinated
async def commit_offsets(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    body = await read_model(request, CommitBody)
    for topic in sorted({entry.topic_name for entry in body.offsets}):
        require(request, AclOperation.READ, Resource.topic(topic))
    offsets = [(e.topic_name, e.partition_id, e.offset, e.metadata) for e in body.offsets]
    if body.transactional_id is None:
        await node.groups.commit(shard, group_id, body.member_id, body.member_epoch, offsets)
    else:
        await _transactional_commit(request, shard, group_id, body, offsets)
    return web.json_response(offsets_body(node, shard.group(group_id), None))


async def _transactional_commit(
    request: web.Request, shard: OffsetsShard, group_id: str, body: CommitBody, offsets: list
) -> None:
    """TxnOffsetCommit: WRITE on the transactional id too, and the producer that owns the transaction."""
    assert body.transactional_id is not None
    require(request, AclOperation.WRITE, Resource.transactional_id(body.transactional_id))
    if body.producer_id == NO_PRODUCER or body.producer_epoch == NO_PRODUCER:
        raise InvalidRequest("a commit naming a transactional_id also names its producer_id and producer_epoch")
    generation = -1 if body.member_epoch is None else body.member_epoch
    await request.app[NODE_KEY].groups.transactional_commit(
        shard,
        group_id,
        body.transactional_id,
        body.producer_id,
        body.producer_epoch,
        body.member_id or "",
        generation,
        offsets,
    )


@routes.get(
    GROUP + "/offsets",
    group_operation(
        "Committed offsets (a negative one, as kafkajs's resetOffsets commits, is no committed offset: not listed)",
        Reply(200, "offsets", {JSON: ConsumerGroupOffsets}),
        query_param("topic", {"type": "string"}, "only this topic"),
    ),
)
@coordinated
async def read_offsets(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    body = offsets_body(node, shard.required_group(group_id), request.query.get("topic") or None)
    visible = describable_topics(request)
    body["data"] = [entry for entry in body["data"] if visible(entry["topic_name"])]
    return web.json_response(body)


@routes.get(
    GROUP + "/lags",
    group_operation("Lag per partition, largest first", Reply(200, "lags", {JSON: ResourceList[ConsumerLag]})),
)
@coordinated
async def list_lags(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    shard.required_group(group_id)
    rows = await _visible_lag_rows(request, shard, group_id)
    items = [lag_resource(node, group_id, row) for row in rows]
    return web.json_response(list_body("KafkaConsumerLagList", node, f"{groups_path(node, group_id)}/lags", items))


@routes.get(
    GROUP + "/lags/{topic_name}/partitions/{partition_id}",
    group_operation("Lag of one partition", Reply(200, "lag", {JSON: ConsumerLag}), TOPIC, PARTITION),
)
@coordinated
async def get_lag(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    topic = request.match_info["topic_name"]
    partition = partition_param(request)
    shard.required_group(group_id)
    node.catalog.partition_record(topic, partition)
    for row in await node.groups.lag_rows(shard, group_id):
        if (row.topic_name, row.partition_id) == (topic, partition):
            return web.json_response(lag_resource(node, group_id, row))
    raise GroupIdNotFound(f"group {group_id!r} neither committed to nor subscribes to {topic}-{partition}")


@routes.get(
    GROUP + "/lag-summary",
    group_operation(
        "Largest and total lag, Burrow group status", Reply(200, "summary", {JSON: ConsumerGroupLagSummary})
    ),
)
@coordinated
async def get_lag_summary(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    shard.required_group(group_id)
    return web.json_response(lag_summary_resource(node, group_id, await _visible_lag_rows(request, shard, group_id)))


@routes.get(
    "/v3/clusters/{cluster_id}/consumer-groups",
    Operation(
        "List consumer groups of the cluster",
        (Reply(200, "groups", {JSON: ResourceList[ConsumerGroup]}),),
        (CLUSTER,),
        tags=TAGS,
    ),
)
async def list_groups(request: web.Request) -> web.Response:
    """Every group of the cluster: each broker lists the groups it coordinates, merged here."""
    node = node_of(request)
    local = [group_resource(node, state) for _, state in node.groups.local_groups()]
    bodies = await from_every_coordinator(request, local, "/internal/groups")
    bodies = [body for body in bodies if may(request, AclOperation.DESCRIBE, Resource.group(body["consumer_group_id"]))]
    bodies.sort(key=lambda body: body["consumer_group_id"])
    return web.json_response(list_body("KafkaConsumerGroupList", node, groups_path(node), bodies))


@routes.get("/internal/groups", internal("The consumer groups this broker coordinates"))
async def local_groups(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    return web.json_response({"data": [group_resource(node, state) for _, state in node.groups.local_groups()]})


@routes.post("/internal/controller/groups/offsets-topic", internal("Create __consumer_offsets on the controller"))
async def create_offsets_topic(request: web.Request) -> web.Response:
    return web.json_response(await request.app[NODE_KEY].groups.offsets_topic.create_on_controller())
