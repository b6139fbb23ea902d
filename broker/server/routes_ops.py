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
from broker.server.metrics import CONTENT_TYPE
from broker.server.middleware import METRICS_KEY
from broker.server.openapi import ApiLimits, openapi_document
from broker.server.params import NODE_KEY


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    controller_id = node.controller_id()
    if controller_id < 0:
        raise ServiceUnavailable("no controller is known yet")
    if all(broker.broker_id != node.node_id for broker in node.brokers()):
        raise ServiceUnavailable(f"broker {node.node_id} is not registered in the cluster yet")
    return web.json_response(
        {"status": "ready", "broker_id": node.node_id, "cluster_id": node.cluster_id, "controller_id": controller_id}
    )


async def metrics(request: web.Request) -> web.Response:
    response = web.Response(body=request.app[METRICS_KEY].exposition())
    response.headers["Content-Type"] = CONTENT_TYPE
    return response


async def openapi(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    return web.json_response(openapi_document(node.advertised_url, ApiLimits.of(node.settings), node.cluster_id))


def add_routes(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/openapi.json", openapi)
