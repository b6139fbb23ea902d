"""``POST /v3/clusters/{c}/producer-ids``: a producer id and epoch for an idempotent producer."""

from __future__ import annotations

from aiohttp import web

from broker.server.params import node_of


async def allocate_producer_id(request: web.Request) -> web.Response:
    node = node_of(request)
    producer_id = await node.allocate_producer_id()
    return web.json_response({"cluster_id": node.cluster_id, "producer_id": producer_id, "producer_epoch": 0})


def add_routes(app: web.Application) -> None:
    app.router.add_post("/v3/clusters/{cluster_id}/producer-ids", allocate_producer_id)
