"""Broker-to-broker routes under ``/internal/``: replica fetch and controller requests.

The replica fetch is binary (``broker.replication.fetch_wire``). Controller requests
are small JSON bodies forwarded by a broker that received a client's request but is
not the controller; they answer with the same JSON error bodies as the public API.
"""

from __future__ import annotations

from dataclasses import replace

from aiohttp import web

from broker.errors import InvalidRequest
from broker.replication.fetch_wire import CONTENT_TYPE, decode_request, encode_response
from broker.server.params import NODE_KEY
from broker.server.resources import partition_body

routes = web.RouteTableDef()


def _node(request: web.Request):
    return request.app[NODE_KEY]


async def _json_body(request: web.Request) -> dict:
    try:
        body = await request.json()
    except ValueError as error:
        raise InvalidRequest(f"request body is not valid JSON: {error}") from None
    if not isinstance(body, dict):
        raise InvalidRequest("request body must be a JSON object")
    return body


@routes.post("/internal/fetch")
async def replica_fetch(request: web.Request) -> web.Response:
    """The long poll is bounded by ``fetch_max_wait_ms`` whatever the request asks (int32 ms is 24 days)."""
    node = _node(request)
    fetch = decode_request(await request.read())
    fetch = replace(fetch, max_wait_ms=min(fetch.max_wait_ms, node.settings.fetch_max_wait_ms))
    responses = await node.serve_replica_fetch(fetch)
    return web.Response(body=encode_response(responses), content_type=CONTENT_TYPE)


@routes.post("/internal/controller/topics")
async def controller_create_topic(request: web.Request) -> web.Response:
    body = await _json_body(request)
    await _node(request).create_topic_on_controller(
        body["name"], int(body["partitions_count"]), int(body["replication_factor"]), dict(body.get("configs", {}))
    )
    return web.json_response({})


@routes.delete("/internal/controller/topics/{topic}")
async def controller_delete_topic(request: web.Request) -> web.Response:
    await _node(request).delete_topic_on_controller(request.match_info["topic"])
    return web.json_response({})


@routes.post("/internal/controller/controlled-shutdown/{broker_id}")
async def controller_controlled_shutdown(request: web.Request) -> web.Response:
    return web.json_response(
        await _node(request).controlled_shutdown_on_controller(int(request.match_info["broker_id"]))
    )


@routes.post("/internal/controller/elect-preferred")
async def controller_elect_preferred(request: web.Request) -> web.Response:
    body = await _json_body(request)
    return web.json_response(await _node(request).elect_preferred_on_controller(body.get("topic")))


@routes.get("/internal/partitions/{topic}")
async def led_partitions(request: web.Request) -> web.Response:
    """The partitions of a topic this broker leads, with the leader's own offsets."""
    node = _node(request)
    described = node.describe_led_partitions(request.match_info["topic"])
    return web.json_response({"data": [partition_body(node, d) for d in described]})


def add_routes(app: web.Application) -> None:
    app.router.add_routes(routes)
