"""Cluster and broker resources: ``/v3/clusters[/{c}]`` and ``/v3/clusters/{c}/brokers[/{b}]``."""

from __future__ import annotations

from aiohttp import web

from broker.errors import NotFound
from broker.server.params import INT32_MAX, NODE_KEY, node_of, parse_int
from broker.server.resources import broker_body, cluster_body, cluster_path, list_body


async def list_clusters(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    return web.json_response(list_body("KafkaClusterList", node, "/v3/clusters", [cluster_body(node)]))


async def get_cluster(request: web.Request) -> web.Response:
    return web.json_response(cluster_body(node_of(request)))


async def list_brokers(request: web.Request) -> web.Response:
    node = node_of(request)
    items = [broker_body(node, broker) for broker in node.brokers()]
    return web.json_response(list_body("KafkaBrokerList", node, f"{cluster_path(node)}/brokers", items))


async def get_broker(request: web.Request) -> web.Response:
    node = node_of(request)
    broker_id = parse_int("broker_id", request.match_info["broker_id"], maximum=INT32_MAX)
    for broker in node.brokers():
        if broker.broker_id == broker_id:
            return web.json_response(broker_body(node, broker))
    raise NotFound(f"broker {broker_id} is not registered in cluster {node.cluster_id!r}", broker_id=broker_id)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v3/clusters", list_clusters)
    app.router.add_get("/v3/clusters/{cluster_id}", get_cluster)
    app.router.add_get("/v3/clusters/{cluster_id}/brokers", list_brokers)
    app.router.add_get("/v3/clusters/{cluster_id}/brokers/{broker_id}", get_broker)
