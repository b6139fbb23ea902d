"""``POST /v3/clusters/{c}/producer-ids``: a producer id and epoch for an idempotent producer."""

from __future__ import annotations

from aiohttp import web

from broker.errors import ClusterAuthorizationFailed
from broker.security.acl import AclOperation, ResourceType
from broker.server.api_routes import CLUSTER, JSON, Operation, Reply, RouteTable
from broker.server.authorization import client_host, principal_of
from broker.server.params import node_of
from broker.server.responses import ProducerId

routes = RouteTable()


@routes.post(
    "/v3/clusters/{cluster_id}/producer-ids",
    Operation(
        "Allocate a producer id (epoch 0) for an idempotent producer: its batches carry the id, "
        "the epoch and per-partition sequences, and a retried batch is never appended twice",
        (Reply(200, "allocated", {JSON: ProducerId}),),
        (CLUSTER,),
    ),
)
async def allocate_producer_id(request: web.Request) -> web.Response:
    node = node_of(request)
    if not node.security.allows_any(
        principal_of(request), client_host(request), AclOperation.WRITE, ResourceType.TOPIC
    ):
        raise ClusterAuthorizationFailed(
            f"{principal_of(request)} may not write any topic, so it gets no idempotent producer id"
        )
    producer_id = await node.controller_gateway.allocate_producer_id()
    return web.json_response({"cluster_id": node.cluster_id, "producer_id": producer_id, "producer_epoch": 0})
