"""Broker-to-broker routes under ``/internal/``: replica fetch and controller requests.

The replica fetch is binary (``broker.replication.fetch_wire``). Controller requests
are small JSON bodies forwarded by a broker that received a client's request but is
not the controller; they answer with the same JSON error bodies as the public API.
Their bodies and path parameters are parsed like the public API's (``params``), so a
malformed request is a 4xx naming what is wrong, never a 500.
"""

from __future__ import annotations

import time

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from broker.cluster.reassignment import PartitionMove
from broker.node.controller_gateway import ControllerGateway
from broker.replica_io.stream_socket import STREAM_PATH
from broker.replication.fetch_wire import CONTENT_TYPE, FetchRequest, FetchResponse, decode_request, encode_response
from broker.server.api_routes import JSON, OBJECT, Body, Operation, Reply, RouteTable
from broker.server.middleware import METRICS_KEY
from broker.server.params import NODE_KEY, path_int, read_model
from broker.server.resources import partition_body
from broker.topics.new_topic import NewTopic

routes = RouteTable()


def internal(summary: str, body: type[BaseModel] | None = None) -> Operation:
    """A broker-to-broker JSON call; answers are the node's own dicts, described only as objects."""
    return Operation(summary, (Reply(200, summary, {JSON: OBJECT}),), body=Body({JSON: body}) if body else None)


class ControllerAlterReassignments(BaseModel):
    """The moves a broker forwards, all or nothing (``replicas`` None cancels that partition's move)."""

    model_config = ConfigDict(extra="forbid")

    moves: list[PartitionMove]


class ControllerAlterConfigs(BaseModel):
    """A config name to its new value, or to None to reset it to the default."""

    model_config = ConfigDict(extra="forbid")

    changes: dict[str, str | None]


class ControllerCreatePartitions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partitions_count: int


class ControllerBalance(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tolerance: float
    max_moves: int


class ControllerElectPreferred(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str | None = None
    partitions: list[tuple[str, int]] | None = None
    """Only these (topic, partition) pairs, when given (Kafka's ElectLeaders names them)."""


def _node(request: web.Request):
    return request.app[NODE_KEY]


def _controller(request: web.Request) -> ControllerGateway:
    """Who answers the ``/internal/controller/`` routes: the gateway runs each on the controller here."""
    return _node(request).controller_gateway


@routes.post(
    "/internal/fetch",
    Operation(
        "Replica fetch: binary request and response (broker.replication.fetch_wire)",
        (Reply(200, "the fetched batches", {CONTENT_TYPE: {"type": "string", "format": "binary"}}),),
        body=Body({CONTENT_TYPE: {"type": "string", "format": "binary"}}),
    ),
)
async def replica_fetch(request: web.Request) -> web.Response:
    response = await _node(request).replicas.serve_replica_fetch(decode_request(await request.read()))
    return web.Response(body=encode_response(response), content_type=CONTENT_TYPE)


@routes.get(
    STREAM_PATH,
    Operation(
        "Replication stream: a WebSocket carrying one follower's fetches and their answers "
        "(broker.replica_io.replication_stream), binary messages of broker.replication.fetch_wire",
        (Reply(101, "switching to the WebSocket protocol"),),
    ),
)
async def replication_stream(request: web.Request) -> web.StreamResponse:
    node = _node(request)
    metrics = request.app[METRICS_KEY]

    async def answer(fetch: FetchRequest) -> FetchResponse:
        started = time.perf_counter()
        response = await node.replicas.serve_replica_fetch(fetch)
        metrics.observe_replica_fetch(time.perf_counter() - started)
        return response

    return await node.replicas.streams.serve(request, answer, node.settings.max_request_bytes)


@routes.post("/internal/controller/topics", internal("Create a topic on the controller", NewTopic))
async def controller_create_topic(request: web.Request) -> web.Response:
    await _controller(request).create_topic_on_controller(await read_model(request, NewTopic))
    return web.json_response({})


@routes.delete("/internal/controller/topics/{topic}", internal("Delete a topic on the controller"))
async def controller_delete_topic(request: web.Request) -> web.Response:
    await _controller(request).delete_topic_on_controller(request.match_info["topic"])
    return web.json_response({})


@routes.post(
    "/internal/controller/topics/{topic}/configs",
    internal("Alter a topic's configs on the controller", ControllerAlterConfigs),
)
async def controller_alter_topic_configs(request: web.Request) -> web.Response:
    body = await read_model(request, ControllerAlterConfigs)
    answer = await _controller(request).alter_topic_configs_on_controller(request.match_info["topic"], body.changes)
    return web.json_response(answer)


@routes.post(
    "/internal/controller/broker-configs",
    internal("Alter the cluster-wide dynamic broker configs on the controller", ControllerAlterConfigs),
)
async def controller_alter_cluster_configs(request: web.Request) -> web.Response:
    body = await read_model(request, ControllerAlterConfigs)
    return web.json_response(await _controller(request).alter_cluster_configs_on_controller(body.changes))


@routes.post(
    "/internal/controller/brokers/{broker_id}/configs",
    internal("Alter one broker's dynamic configs on the controller", ControllerAlterConfigs),
)
async def controller_alter_broker_configs(request: web.Request) -> web.Response:
    broker_id = path_int(request, "broker_id")
    body = await read_model(request, ControllerAlterConfigs)
    return web.json_response(await _controller(request).alter_broker_configs_on_controller(broker_id, body.changes))


@routes.post(
    "/internal/controller/topics/{topic}/partitions",
    internal("Grow a topic's partitions on the controller", ControllerCreatePartitions),
)
async def controller_create_partitions(request: web.Request) -> web.Response:
    body = await read_model(request, ControllerCreatePartitions)
    answer = await _controller(request).create_partitions_on_controller(
        request.match_info["topic"], body.partitions_count
    )
    return web.json_response(answer)


@routes.post(
    "/internal/controller/controlled-shutdown/{broker_id}", internal("Move a stopping broker's leaderships away")
)
async def controller_controlled_shutdown(request: web.Request) -> web.Response:
    broker_id = path_int(request, "broker_id")
    return web.json_response(await _controller(request).controlled_shutdown_on_controller(broker_id))


@routes.post(
    "/internal/controller/elect-preferred", internal("Restore in-sync preferred leaders", ControllerElectPreferred)
)
async def controller_elect_preferred(request: web.Request) -> web.Response:
    body = await read_model(request, ControllerElectPreferred)
    return web.json_response(await _controller(request).elect_preferred_on_controller(body.topic, body.partitions))


@routes.post(
    "/internal/controller/reassignments",
    internal("Start, replace or cancel partition moves on the controller", ControllerAlterReassignments),
)
async def controller_alter_reassignments(request: web.Request) -> web.Response:
    body = await read_model(request, ControllerAlterReassignments)
    return web.json_response(await _controller(request).alter_reassignments_on_controller(body.moves))


@routes.post("/internal/controller/drain/{broker_id}", internal("Mark a broker drained and move its replicas off"))
async def controller_drain_broker(request: web.Request) -> web.Response:
    broker_id = path_int(request, "broker_id")
    return web.json_response(await _controller(request).drain_broker_on_controller(broker_id))


@routes.post("/internal/controller/undrain/{broker_id}", internal("Let a drained broker take new replicas again"))
async def controller_undrain_broker(request: web.Request) -> web.Response:
    broker_id = path_int(request, "broker_id")
    return web.json_response(await _controller(request).undrain_broker_on_controller(broker_id))


@routes.post("/internal/controller/balance", internal("One bounded step of balancing replicas", ControllerBalance))
async def controller_balance_brokers(request: web.Request) -> web.Response:
    body = await read_model(request, ControllerBalance)
    return web.json_response(await _controller(request).balance_brokers_on_controller(body.tolerance, body.max_moves))


@routes.get("/internal/partitions/{topic}", internal("The partitions of a topic this broker leads"))
async def led_partitions(request: web.Request) -> web.Response:
    """The partitions of a topic this broker leads, with the leader's own offsets."""
    node = _node(request)
    described = node.describer.describe_led_partitions(request.match_info["topic"])
    data = [partition_body(node, d) | {"latest_offset_available": d.latest_offset_available} for d in described]
    return web.json_response({"data": data})
