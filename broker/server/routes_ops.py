"""Operations endpoints: ``/healthz``, ``/readyz``, ``/metrics``, ``/openapi.json``.

``/healthz`` is liveness: the event loop answers, nothing else is checked, so an
orchestrator never restarts a broker that is merely catching up. ``/readyz`` is
readiness: the broker knows a controller and finds itself among the registered
brokers, i.e. it can serve metadata and its partitions; otherwise 503 with
``Retry-After``.
"""

from __future__ import annotations

from aiohttp import web

from broker.errors import ServiceUnavailable
from broker.server.api_routes import API_ROUTES_KEY, JSON, OBJECT, ApiLimits, Operation, Reply, RouteTable
from broker.server.metrics import CONTENT_TYPE
from broker.server.middleware import METRICS_KEY
from broker.server.openapi import openapi_document
from broker.server.params import NODE_KEY

routes = RouteTable()


@routes.get("/healthz", Operation("Liveness", (Reply(200, "alive", {JSON: OBJECT}),)))
async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


@routes.get(
    "/readyz",
    Operation("Readiness: controller known and this broker registered", (Reply(200, "ready", {JSON: OBJECT}),)),
)
async def readyz(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    controller_id = node.catalog.controller_id()
    if controller_id < 0:
        raise ServiceUnavailable("no controller is known yet")
    if all(broker.broker_id != node.node_id for broker in node.catalog.brokers()):
        raise ServiceUnavailable(f"broker {node.node_id} is not registered in the cluster yet")
    return web.json_response(
        {"status": "ready", "broker_id": node.node_id, "cluster_id": node.cluster_id, "controller_id": controller_id}
    )


@routes.get(
    "/metrics",
    Operation("Prometheus metrics", (Reply(200, "text exposition format", {"text/plain": {"type": "string"}}),)),
)
async def metrics(request: web.Request) -> web.Response:
    response = web.Response(body=request.app[METRICS_KEY].exposition())
    response.headers["Content-Type"] = CONTENT_TYPE
    return response


@routes.get("/openapi.json", Operation("This document", (Reply(200, "OpenAPI 3.1", {JSON: OBJECT}),)))
async def openapi(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    document = openapi_document(
        request.app[API_ROUTES_KEY],
        node.advertised_url,
        ApiLimits.of(node.settings),
        node.cluster_id,
        node.settings.security.authentication,
    )
    return web.json_response(document)
