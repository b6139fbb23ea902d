"""Cluster and broker resources: ``/v3/clusters[/{c}]`` and ``/v3/clusters/{c}/brokers[/{b}]``."""

from __future__ import annotations

from aiohttp import web

from broker.errors import NotFound
from broker.server.api_routes import CLUSTER, JSON, Operation, Reply, RouteTable, path_param
from broker.server.params import INT32_MAX, NODE_KEY, node_of, path_int
from broker.server.resources import broker_body, cluster_body, cluster_path, list_body
from broker.server.responses import Broker, Cluster, ResourceList

BROKER = path_param("broker_id", {"type": "integer", "minimum": 0, "maximum": INT32_MAX}, "broker id")
routes = RouteTable()


@routes.get(
    "/v3/clusters", Operation("List clusters (this one)", (Reply(200, "clusters", {JSON: ResourceList[Cluster]}),))
)
async def list_clusters(request: web.Request) -> web.Response:
    node = request.app[NODE_KEY]
    return web.json_response(list_body("KafkaClusterList", node, "/v3/clusters", [cluster_body(node)]))


@routes.get(
    "/v3/clusters/{cluster_id}",
    Operation("Describe the cluster", (Reply(200, "cluster", {JSON: Cluster}),), (CLUSTER,)),
)
async def get_cluster(request: web.Request) -> web.Response:
    return web.json_response(cluster_body(node_of(request)))


@routes.get(
    "/v3/clusters/{cluster_id}/brokers",
    Operation("List brokers", (Reply(200, "brokers", {JSON: ResourceList[Broker]}),), (CLUSTER,)),
)
async def list_brokers(request: web.Request) -> web.Response:
    node = node_of(request)
    items = [broker_body(node, broker) for broker in node.catalog.brokers()]
    return web.json_response(list_body("KafkaBrokerList", node, f"{cluster_path(node)}/brokers", items))


@routes.get(
    "/v3/clusters/{cluster_id}/brokers/{broker_id}",
    Operation("Describe a broker", (Reply(200, "broker", {JSON: Broker}),), (CLUSTER, BROKER)),
)
async def get_broker(request: web.Request) -> web.Response:
    node = node_of(request)
    broker_id = path_int(request, "broker_id")
    for broker in node.catalog.brokers():
        if broker.broker_id == broker_id:
            return web.json_response(broker_body(node, broker))
    raise NotFound(f"broker {broker_id} is not registered in cluster {node.cluster_id!r}", broker_id=broker_id)
