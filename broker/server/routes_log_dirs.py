"""A broker's log directory: the bytes each replica on it holds (Kafka's DescribeLogDirs), DESCRIBE on the cluster.

``GET /v3/clusters/{c}/brokers/{b}/log-dirs`` answers one entry per log directory
(highwater keeps one per broker, its ``data_dir``): its total ``size_bytes`` and, per
replica held there, the bytes of its log segments and its log end offset. Only broker
``b`` knows its files, so a request about another broker is passed to it
(``passing_on``). ``brokers list`` shows each broker's bytes from it, and a move's
progress bar the bytes each new replica has copied against its leader's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from broker.server.admin_bodies import list_of
from broker.server.api_routes import CLUSTER, JSON, Operation, Reply, RouteTable
from broker.server.params import node_of, path_int
from broker.server.passing_on import pass_on
from broker.server.resources import cluster_path
from broker.server.responses import ResourceList, ResponseBody
from broker.server.routes_cluster import BROKER

if TYPE_CHECKING:
    from broker.server.host import HttpHost

LOG_DIRS = "/v3/clusters/{cluster_id}/brokers/{broker_id}/log-dirs"
routes = RouteTable()


class ReplicaSize(ResponseBody):
    topic_name: str
    partition_id: int
    size_bytes: int
    log_end_offset: int


class LogDirData(ResponseBody):
    kind: str
    broker_id: int
    log_dir: str
    size_bytes: int
    replicas: list[ReplicaSize]


class LogDirDataList(ResourceList[LogDirData]):
    pass


def _local_log_dirs(node: HttpHost) -> list[dict[str, Any]]:
    usage = node.replicas.log_dir_usage()
    replicas = [
        {
            "topic_name": replica.topic,
            "partition_id": replica.partition,
            "size_bytes": replica.size_bytes,
            "log_end_offset": replica.log_end_offset,
        }
        for replica in usage.replicas
    ]
    return [
        {
            "kind": "KafkaLogDir",
            "broker_id": node.node_id,
            "log_dir": usage.path,
            "size_bytes": usage.size_bytes,
            "replicas": replicas,
        }
    ]


@routes.get(
    LOG_DIRS,
    Operation(
        "A broker's log directory: the bytes of each replica it holds (highwater's)",
        (Reply(200, "its log directories", {JSON: LogDirDataList}),),
        (CLUSTER, BROKER),
    ),
)
async def list_log_dirs(request: web.Request) -> web.Response:
    node = node_of(request)
    broker_id = path_int(request, "broker_id")
    path = f"{cluster_path(node)}/brokers/{broker_id}/log-dirs"
    if broker_id == node.node_id:
        return web.json_response(list_of("KafkaLogDirList", node, path, _local_log_dirs(node)))
    return web.json_response(await pass_on(request, node, broker_id, path))
