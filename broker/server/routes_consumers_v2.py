"""REST Proxy v2 consumer API: ``/consumers/{group}/instances/{instance}/…``.

Unlike Confluent's proxy, no broker keeps an instance in its own memory: every call is
answered by the group's coordinator (``broker.groups.rest_driver``), to which any other
broker forwards it unchanged, so ``base_uri`` names a path every broker serves and a load
balancer in front of the brokers needs no sticky sessions. ``base_uri`` keeps the scheme
and host the client used (passed along a forward in ``X-Highwater-Base-Url``).

Errors carry Confluent's v2 ``error_code`` and a ``message`` (40403 unknown instance,
40902 instance exists, 40401 unknown topic, 40402 unknown partition, 40601 format
mismatch, 40903 subscribe and assign mixed, 42204 unserved format) in highwater's error
body, whose extra fields (``error``, ``retriable``) v2 clients ignore.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from pydantic import BaseModel

from broker.clock import wall_clock_ms
from broker.errors import HighwaterError, UnknownPartition, UnknownTopic
from broker.groups.rest_instances import FORMATS, RestInstanceError, illegal_state
from broker.groups.shard import OffsetsShard
from broker.security.acl import AclOperation, Resource
from broker.server.api_routes import Body, Operation, Param, Reply, RouteTable, link, path_param, query_param
from broker.server.authorization import require
from broker.server.coordinator_forwarding import forward_to_coordinator, forwarded
from broker.server.params import NODE_KEY, parse_json, query_int, read_model, require_json
from broker.server.routes_consumers_v2_models import (
    ConsumerAssignmentRequest,
    ConsumerAssignmentResponse,
    ConsumerCommittedRequest,
    ConsumerCommittedResponse,
    ConsumerOffsetCommitRequest,
    ConsumerRecords,
    ConsumerSeekRequest,
    ConsumerSeekToRequest,
    ConsumerSubscriptionRecord,
    ConsumerSubscriptionResponse,
    CreateConsumerInstanceRequest,
    CreateConsumerInstanceResponse,
)

V2_JSON = "application/vnd.kafka.v2+json"
BASE_URL_HEADER = "X-Highwater-Base-Url"
RECORD_FORMATS = ("json", "binary", "avro", "jsonschema", "protobuf")
GROUP = "/consumers/{consumer_group_id}"
INSTANCE = GROUP + "/instances/{consumer_id}"
TAGS = ("consumers-v2",)

GROUP_NAME = path_param(
    "consumer_group_id", {"type": "string", "minLength": 1}, "consumer group (Confluent's group_name)"
)
INSTANCE_NAME = path_param(
    "consumer_id", {"type": "string", "minLength": 1}, "consumer instance (Confluent's instance)"
)
routes = RouteTable()

Handler = Callable[[web.Request, OffsetsShard, str], Awaitable[web.StreamResponse]]


def operation(summary: str, reply: Reply, *params: Param, body: type[BaseModel] | None = None) -> Operation:
    path_params = (GROUP_NAME,) if summary.startswith("Create") else (GROUP_NAME, INSTANCE_NAME)
    request_body = Body({V2_JSON: body}, required=body is not ConsumerOffsetCommitRequest) if body else None
    return Operation(summary, (reply,), (*path_params, *params), request_body, tags=TAGS)


def _instance_links() -> dict[str, Any]:
    """From a create's answer to the calls on the new instance (for clients and the stateful fuzzer)."""
    names = {"consumer_group_id": "$request.path.consumer_group_id", "consumer_id": "$response.body#/instance_id"}
    return {
        "Subscribe": link(INSTANCE + "/subscription", "post", **names),
        "Assign": link(INSTANCE + "/assignments", "post", **names),
        "ReadRecords": link(INSTANCE + "/records", "get", **names),
        "DeleteInstance": link(INSTANCE, "delete", **names),
    }


def v2_json(document: Any, status: int = 200) -> web.Response:
    return web.json_response(document, status=status, content_type=V2_JSON)


def v2_error(status: int, code: int, message: str, name: str) -> HighwaterError:
    """An error with a v2 code: an instance of the base row, so it adds no row to ``error_table``."""
    error = HighwaterError(message)
    error.http_status, error.error_code, error.name = status, code, name
    return error


async def _forward(request: web.Request, url: str) -> web.Response:
    """Relay the call to the coordinator at ``url`` with the v2 media types and the base URL it answers with."""
    headers = {
        BASE_URL_HEADER: _base_url(request),
        "Content-Type": request.headers.get("Content-Type", V2_JSON),
        "Accept": request.headers.get("Accept", V2_JSON),
    }
    return await forward_to_coordinator(request, url, "group coordinator", headers)


def _base_url(request: web.Request) -> str:
    return request.headers.get(BASE_URL_HEADER) or f"{request.scheme}://{request.host}"


def coordinated(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Run ``handler`` on the group's coordinator (here or forwarded), answering v2 error bodies."""

    async def route(request: web.Request) -> web.StreamResponse:
        node = request.app[NODE_KEY]
        group_id = request.match_info["consumer_group_id"]
        try:
            target = await node.groups.route(group_id, forwarded=forwarded(request))
            if isinstance(target, str):
                return await _forward(request, target)
            return await handler(request, target, group_id)
        except RestInstanceError as error:
            raise v2_error(error.http_status, error.error_code, error.message, "REST_CONSUMER_ERROR") from None
        except UnknownPartition as error:
            raise v2_error(404, 40402, error.message, error.name) from None
        except UnknownTopic as error:
            raise v2_error(404, 40401, error.message, error.name) from None

    return route


def _name(request: web.Request) -> str:
    return request.match_info["consumer_id"]


def _check_partitions(request: web.Request, partitions: list[tuple[str, int]]) -> None:
    """Every named partition exists (40401/40402) and the caller may READ its topic (Kafka's consumer ACL)."""
    node = request.app[NODE_KEY]
    for topic, partition in partitions:
        node.catalog.partition_record(topic, partition)
    for topic in sorted({topic for topic, _ in partitions}):
        require(request, AclOperation.READ, Resource.topic(topic))


@routes.post(
    GROUP,
    operation(
        "Create a consumer instance in the group (any broker serves it afterwards)",
        Reply(
            200,
            "the instance id and its base URI",
            {V2_JSON: CreateConsumerInstanceResponse},
            links=_instance_links(),
        ),
        body=CreateConsumerInstanceRequest,
    ),
)
@coordinated
async def create_instance(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    body = await read_model(request, CreateConsumerInstanceRequest)
    format_ = body.format.lower()
    if format_ not in FORMATS:
        raise RestInstanceError(
            422, 42204, f"invalid consumer configuration: format {body.format!r} is not json or binary"
        )
    timeout_ms = node.settings.rest_consumer_instance_timeout_ms
    name = body.name or body.id or f"rest-consumer-{uuid.uuid4().hex}"
    await node.groups.rest.create(shard, group_id, name, body.config(format_, timeout_ms), wall_clock_ms())
    base_uri = f"{_base_url(request)}/consumers/{group_id}/instances/{name}"
    return v2_json({"instance_id": name, "base_uri": base_uri})


@routes.delete(INSTANCE, operation("Delete the instance; it leaves the group", Reply(204, "deleted")))
@coordinated
async def delete_instance(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    await request.app[NODE_KEY].groups.rest.delete(shard, group_id, _name(request), wall_clock_ms())
    return web.Response(status=204)


@routes.post(
    INSTANCE + "/subscription",
    operation(
        "Subscribe to topics or a pattern: the instance joins the group",
        Reply(204, "subscribed"),
        body=ConsumerSubscriptionRecord,
    ),
)
@coordinated
async def subscribe(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    body = await read_model(request, ConsumerSubscriptionRecord)
    for topic in sorted(set(body.topics or ())):
        require(request, AclOperation.READ, Resource.topic(topic))
    rest = request.app[NODE_KEY].groups.rest
    await rest.change(
        shard,
        group_id,
        _name(request),
        wall_clock_ms(),
        lambda instance: instance.subscribe(body.topics, body.topic_pattern),
    )
    return web.Response(status=204)


@routes.get(
    INSTANCE + "/subscription",
    operation("The subscribed topics", Reply(200, "topics", {V2_JSON: ConsumerSubscriptionResponse})),
)
@coordinated
async def get_subscription(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    instance = node.groups.rest.instance(shard, group_id, _name(request), wall_clock_ms())
    subscription = instance.subscription
    topics: list[str] = []
    if subscription is not None:
        topics = sorted(subscription.resolve({name: 1 for name in node.catalog.topic_names()}))
    return v2_json({"topics": topics})


@routes.delete(INSTANCE + "/subscription", operation("Unsubscribe: the instance leaves the group", Reply(204, "done")))
@coordinated
async def unsubscribe(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    rest = request.app[NODE_KEY].groups.rest
    await rest.change(shard, group_id, _name(request), wall_clock_ms(), lambda instance: instance.unsubscribe())
    return web.Response(status=204)


@routes.post(
    INSTANCE + "/assignments",
    operation("Assign partitions manually", Reply(204, "assigned"), body=ConsumerAssignmentRequest),
)
@coordinated
async def assign(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    body = await read_model(request, ConsumerAssignmentRequest)
    partitions = [(p.topic, p.partition) for p in body.partitions]
    _check_partitions(request, partitions)
    rest = request.app[NODE_KEY].groups.rest
    await rest.change(
        shard, group_id, _name(request), wall_clock_ms(), lambda instance: instance.assign(frozenset(partitions))
    )
    return web.Response(status=204)


@routes.get(
    INSTANCE + "/assignments",
    operation("The partitions the instance owns now", Reply(200, "partitions", {V2_JSON: ConsumerAssignmentResponse})),
)
@coordinated
async def get_assignments(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    rest = request.app[NODE_KEY].groups.rest
    async with rest.locked(shard, group_id, _name(request), wall_clock_ms()) as instance:
        owned = rest.reconcile(shard, shard.group(group_id), instance)
    return v2_json({"partitions": [{"topic": t, "partition": p} for t, p in sorted(owned)]})


@routes.post(
    INSTANCE + "/positions",
    operation(
        "Seek: the next read of each partition starts at its offset", Reply(204, "done"), body=ConsumerSeekRequest
    ),
)
@coordinated
async def seek(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    body = await read_model(request, ConsumerSeekRequest)
    targets = {(o.topic, o.partition): o.offset for o in body.offsets}
    _check_partitions(request, list(targets))
    rest = request.app[NODE_KEY].groups.rest
    async with rest.locked(shard, group_id, _name(request), wall_clock_ms()) as instance:
        owned = rest.reconcile(shard, shard.group(group_id), instance)
        for tp, offset in targets.items():
            if tp not in owned:
                raise illegal_state(f"no current assignment for partition {tp[0]}-{tp[1]}")
            await rest.check_range(tp, offset)
        for tp, offset in targets.items():
            instance.seek(owned, tp, offset)
    return web.Response(status=204)


async def _seek_to(request: web.Request, shard: OffsetsShard, group_id: str, end: bool) -> web.Response:
    body = await read_model(request, ConsumerSeekToRequest)
    partitions = [(p.topic, p.partition) for p in body.partitions]
    _check_partitions(request, partitions)
    rest = request.app[NODE_KEY].groups.rest
    async with rest.locked(shard, group_id, _name(request), wall_clock_ms()) as instance:
        owned = rest.reconcile(shard, shard.group(group_id), instance)
        for tp in partitions:
            if tp not in owned:
                raise illegal_state(f"no current assignment for partition {tp[0]}-{tp[1]}")
        targets = {}
        for topic in sorted({t for t, _ in partitions}):
            ranges = await rest.ranges(topic)
            for tp in (tp for tp in partitions if tp[0] == topic):
                low, high = ranges.get(tp[1], (0, 0))
                targets[tp] = high if end else low
        for tp, offset in targets.items():
            instance.seek(owned, tp, offset)
    return web.Response(status=204)


@routes.post(
    INSTANCE + "/positions/beginning",
    operation("Seek to the log start offsets", Reply(204, "done"), body=ConsumerSeekToRequest),
)
@coordinated
async def seek_to_beginning(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    return await _seek_to(request, shard, group_id, end=False)


@routes.post(
    INSTANCE + "/positions/end",
    operation("Seek to the high watermarks", Reply(204, "done"), body=ConsumerSeekToRequest),
)
@coordinated
async def seek_to_end(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    return await _seek_to(request, shard, group_id, end=True)


def _wanted_format(request: web.Request) -> str | None:
    accept = request.headers.get("Accept", "").lower()
    return next((f for f in RECORD_FORMATS if f"application/vnd.kafka.{f}.v2+json" in accept), None)


@routes.get(
    INSTANCE + "/records",
    operation(
        "Read records below the high watermark from the partitions the instance owns",
        Reply(200, "records", {f"application/vnd.kafka.{f}.v2+json": ConsumerRecords for f in FORMATS}),
        query_param(
            "timeout",
            {"type": "integer", "minimum": 0},
            "long-poll milliseconds: the longest a read waits for records (for fetch.min.bytes of them, if the"
            " instance sets it); default consumer.request.timeout.ms, at most the broker's fetch_max_wait_ms",
        ),
        query_param(
            "max_bytes",
            {"type": "integer", "minimum": 1},
            "cap on the whole answer's keys' and values' bytes (only a first record larger than it still comes)",
        ),
    ),
)
@coordinated
async def read_records(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = request.app[NODE_KEY]
    settings = node.settings
    timeout = query_int(request.query, "timeout", None)
    max_bytes = query_int(request.query, "max_bytes", settings.fetch_max_bytes_default, minimum=1)
    assert max_bytes is not None
    instance = node.groups.rest.instance(shard, group_id, _name(request), wall_clock_ms())
    wanted = _wanted_format(request)
    if wanted is not None and wanted != instance.config.format:
        raise RestInstanceError(
            406, 40601, f"the instance reads format {instance.config.format}; the request accepts {wanted}"
        )
    content_type = f"application/vnd.kafka.{instance.config.format}.v2+json"
    if request.method == "HEAD":  # aiohttp answers HEAD with the GET handler: a HEAD must not consume records
        return web.Response(content_type=content_type)
    if timeout is None:
        timeout = instance.config.request_timeout_ms
    records = await node.groups.rest.read(
        shard,
        group_id,
        _name(request),
        min(timeout, settings.fetch_max_wait_ms),
        min(max_bytes, settings.max_request_bytes),
        wall_clock_ms(),
        lambda topic: require(request, AclOperation.READ, Resource.topic(topic)),
    )
    return web.json_response(records, content_type=content_type)


@routes.post(
    INSTANCE + "/offsets",
    operation(
        "Commit the given offsets (each the last record consumed), or every position without a body",
        Reply(204, "committed (acks=all)"),
        body=ConsumerOffsetCommitRequest,
    ),
)
@coordinated
async def commit(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    raw = await request.read()
    offsets = None
    if raw.strip():
        require_json(request)
        body = ConsumerOffsetCommitRequest.model_validate(parse_json(raw))
        if body.offsets is not None:
            _check_partitions(request, [(o.topic, o.partition) for o in body.offsets])
            offsets = [(o.topic, o.partition, o.offset, o.metadata or "") for o in body.offsets]
    await request.app[NODE_KEY].groups.rest.commit(shard, group_id, _name(request), offsets, wall_clock_ms())
    return web.Response(status=204)


@routes.get(
    INSTANCE + "/offsets",
    operation(
        "The group's committed offsets of the given partitions (-1 where none, or where a negative one was committed)",
        Reply(200, "offsets", {V2_JSON: ConsumerCommittedResponse}),
        body=ConsumerCommittedRequest,
    ),
)
@coordinated
async def committed(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    body = await read_model(request, ConsumerCommittedRequest)
    partitions = [(p.topic, p.partition) for p in body.partitions]
    _check_partitions(request, partitions)
    request.app[NODE_KEY].groups.rest.instance(shard, group_id, _name(request), wall_clock_ms())
    state = shard.group(group_id)
    answer = []
    for tp in partitions:
        found = state.position(tp)
        answer.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "offset": found.offset if found else -1,
                "metadata": found.metadata if found else "",
            }
        )
    return v2_json({"offsets": answer})
