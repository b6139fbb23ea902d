"""Consumer groups over HTTP: KIP-848 heartbeats, committed offsets, lag (REST Proxy v3 paths).

Every per-group request is answered by the group's coordinator (the leader of its
``__consumer_offsets`` partition). Any broker accepts it: a broker that is not the
coordinator forwards the request unchanged and relays the answer, marking it with
``X-Highwater-Forwarded-By`` so a coordinator change mid-flight ends in a retriable
``NOT_COORDINATOR`` (with ``coordinator_id``/``coordinator_url``) rather than a loop.

Heartbeat: ``POST …/consumer-groups/{g}/consumers/{member}:heartbeat`` with
``{member_epoch, subscribed_topics | subscribed_topic_regex, owned_partitions?,
rebalance_timeout_ms?, session_timeout_ms?, client_id?, server_assignor?}``; member
epoch 0 joins, -1 leaves. The answer carries the member's epoch and the partitions it
owns now. A member acknowledges a revocation by sending ``owned_partitions`` without
the revoked partitions (see ``broker.groups.membership``).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Literal

import aiohttp
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from broker.errors import InvalidRequest
from broker.groups.bodies import group_body, groups_path, lag_body, member_body, offsets_body, partitions_by_topic
from broker.groups.errors import CoordinatorNotAvailable, GroupIdNotFound, UnknownMemberId
from broker.groups.lag import lag_summary
from broker.groups.membership import LEAVE_EPOCH, HeartbeatRequest, Subscription
from broker.groups.shard import OffsetsShard
from broker.server.params import INT64_MAX, NODE_KEY, JsonInt, node_of, partition_param, read_model
from broker.server.partition_ids import PartitionId
from broker.server.resources import list_body

FORWARDED_HEADER = "X-Highwater-Forwarded-By"
GROUP = "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}"
MIN_HEARTBEAT_INTERVAL_MS = 100
MAX_HEARTBEAT_INTERVAL_MS = 5000
FORWARD_TIMEOUT_S = 35.0

routes = web.RouteTableDef()


class TopicPartitions(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topic: str
    partitions: list[PartitionId] = Field(default_factory=list)


class HeartbeatBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    member_epoch: JsonInt = Field(ge=-1)
    subscribed_topics: list[str] | None = None
    subscribed_topic_regex: str | None = None
    owned_partitions: list[TopicPartitions] | None = None
    rebalance_timeout_ms: JsonInt = Field(30_000, ge=1, le=3_600_000)
    session_timeout_ms: JsonInt = Field(10_000, ge=100, le=3_600_000)
    client_id: str = ""
    server_assignor: Literal["uniform", "range"] = "uniform"

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
    offset: JsonInt = Field(ge=0, le=INT64_MAX)
    metadata: str = ""


class CommitBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    member_id: str | None = None
    member_epoch: JsonInt | None = None
    offsets: list[OffsetEntry]


Handler = Callable[[web.Request, OffsetsShard, str], Awaitable[web.StreamResponse]]


async def _forward(request: web.Request, url: str) -> web.Response:
    node = request.app[NODE_KEY]
    headers = {FORWARDED_HEADER: str(node.node_id), "Content-Type": "application/json"}
    body = await request.read() if request.body_exists else None
    try:
        async with node.session.request(
            request.method,
            f"{url}{request.rel_url}",
            data=body,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=FORWARD_TIMEOUT_S),
        ) as reply:
            raw = await reply.read()
            return web.Response(body=raw, status=reply.status, content_type="application/json")
    except (TimeoutError, aiohttp.ClientError, OSError) as error:
        raise CoordinatorNotAvailable(f"could not reach the group coordinator at {url}: {error}") from None


def coordinated(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Run ``handler`` on the group's coordinator: here if it is this broker, else forwarded."""

    async def route(request: web.Request) -> web.StreamResponse:
        node = node_of(request)
        group_id = request.match_info["consumer_group_id"]
        target = await node.groups.route(group_id, forwarded=FORWARDED_HEADER in request.headers)
        if isinstance(target, str):
            return await _forward(request, target)
        return await handler(request, target, group_id)

    return route


def _existing(shard: OffsetsShard, group_id: str):
    state = shard.existing_group(group_id)
    if state is None:
        raise GroupIdNotFound(f"consumer group {group_id!r} does not exist (no members, no committed offsets)")
    return state


def _heartbeat_interval_ms(session_timeout_ms: int) -> int:
    return max(MIN_HEARTBEAT_INTERVAL_MS, min(MAX_HEARTBEAT_INTERVAL_MS, session_timeout_ms // 3))


@routes.post(GROUP + "/consumers/{consumer_id}:heartbeat")
@coordinated
async def heartbeat(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    body = await read_model(request, HeartbeatBody)
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


@routes.delete(GROUP + "/consumers/{consumer_id:[^{}/:]+}")
@coordinated
async def leave_group(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    request.app[NODE_KEY].groups.leave(shard, group_id, request.match_info["consumer_id"])
    return web.Response(status=204)


@routes.get(GROUP + "/consumers")
@coordinated
async def list_members(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    state = _existing(shard, group_id)
    items = [member_body(node, group_id, m) for _, m in sorted(state.membership.members.items())]
    return web.json_response(list_body("KafkaConsumerList", node, f"{groups_path(node, group_id)}/consumers", items))


@routes.get(GROUP + "/consumers/{consumer_id:[^{}/:]+}")
@coordinated
async def get_member(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    member_id = request.match_info["consumer_id"]
    member = _existing(shard, group_id).membership.members.get(member_id)
    if member is None:
        raise UnknownMemberId(f"member {member_id!r} is not in group {group_id!r}", member_id=member_id)
    return web.json_response(member_body(node, group_id, member))


@routes.get(GROUP)
@coordinated
async def get_group(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    return web.json_response(group_body(request.app[NODE_KEY], _existing(shard, group_id)))


@routes.delete(GROUP)
@coordinated
async def delete_group(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    _existing(shard, group_id)
    await request.app[NODE_KEY].groups.delete_group(shard, group_id)
    return web.Response(status=204)


@routes.post(GROUP + "/offsets")
@coordinated
async def commit_offsets(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    body = await read_model(request, CommitBody)
    offsets = [(e.topic_name, e.partition_id, e.offset, e.metadata) for e in body.offsets]
    await node.groups.commit(shard, group_id, body.member_id, body.member_epoch, offsets)
    return web.json_response(offsets_body(node, shard.group(group_id), None))


@routes.get(GROUP + "/offsets")
@coordinated
async def read_offsets(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    return web.json_response(offsets_body(node, _existing(shard, group_id), request.query.get("topic") or None))


@routes.get(GROUP + "/lags")
@coordinated
async def list_lags(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    _existing(shard, group_id)
    rows = await node.groups.lag_rows(shard, group_id)
    items = [lag_body(node, group_id, row) for row in rows]
    return web.json_response(list_body("KafkaConsumerLagList", node, f"{groups_path(node, group_id)}/lags", items))


@routes.get(GROUP + "/lags/{topic_name}/partitions/{partition_id}")
@coordinated
async def get_lag(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    topic = request.match_info["topic_name"]
    partition = partition_param(request)
    _existing(shard, group_id)
    node.partition_record(topic, partition)
    for row in await node.groups.lag_rows(shard, group_id):
        if (row.topic_name, row.partition_id) == (topic, partition):
            return web.json_response(lag_body(node, group_id, row))
    raise GroupIdNotFound(f"group {group_id!r} neither committed to nor subscribes to {topic}-{partition}")


@routes.get(GROUP + "/lag-summary")
@coordinated
async def get_lag_summary(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    _existing(shard, group_id)
    summary = lag_summary(group_id, await node.groups.lag_rows(shard, group_id))
    return web.json_response({"kind": "KafkaConsumerGroupLagSummary", "cluster_id": node.cluster_id, **summary})


@routes.get("/v3/clusters/{cluster_id}/consumer-groups")
async def list_groups(request: web.Request) -> web.Response:
    """Every group of the cluster: each broker lists the groups it coordinates, merged here."""
    node = node_of(request)
    bodies = [group_body(node, state) for _, state in node.groups.local_groups()]
    others = [r.url for broker_id, r in sorted(node.view.brokers.items()) if broker_id != node.node_id]
    answers = await asyncio.gather(
        *(node.forwarder.json_call("GET", f"{url}/internal/groups", timeout_s=5) for url in others),
        return_exceptions=True,
    )
    for answer in answers:
        if isinstance(answer, dict):
            bodies.extend(answer.get("data", []))
    bodies.sort(key=lambda body: body["consumer_group_id"])
    return web.json_response(list_body("KafkaConsumerGroupList", node, groups_path(node), bodies))


@routes.get("/internal/groups")
async def local_groups(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    return web.json_response({"data": [group_body(node, state) for _, state in node.groups.local_groups()]})


@routes.post("/internal/controller/groups/offsets-topic")
async def create_offsets_topic(request: web.Request) -> web.Response:
    return web.json_response(await request.app[NODE_KEY].groups.create_offsets_topic_on_controller())


def add_routes(app: web.Application) -> None:
    app.router.add_routes(routes)
