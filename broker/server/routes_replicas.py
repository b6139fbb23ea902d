"""Replicas of a partition and of a broker (their moves are ``routes_reassignments``).

A replica is ``is_leader`` when the partition record names its broker leader and
``is_in_sync`` when it is in the ISR. A partition's replicas come from its leader
when it answers, with each replica's ``log_end_offset`` (highwater's addition: the
leader's record of the follower's last fetch offset); from this broker's metadata
otherwise, without it. A broker's replicas come from the metadata alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from broker.errors import NotFound
from broker.server.admin_bodies import (
    ReplicaData,
    ReplicaDataList,
    list_of,
    topic_path,
    url,
)
from broker.server.api_routes import CLUSTER, JSON, PARTITION, TOPIC, Operation, Reply, RouteTable
from broker.server.authorization import describable_topics
from broker.server.params import node_of, partition_param, path_int
from broker.server.resources import cluster_path
from broker.server.routes_cluster import BROKER

if TYPE_CHECKING:
    from broker.server.host import HttpHost

PARTITIONS = "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions"
routes = RouteTable()


def _replica_body(
    node: HttpHost, topic: str, partition: int, broker_id: int, leader: int, isr: list[int], leo: int | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "KafkaReplica",
        "metadata": {"self": url(node, f"{topic_path(node, topic)}/partitions/{partition}/replicas/{broker_id}")},
        "cluster_id": node.cluster_id,
        "topic_name": topic,
        "partition_id": partition,
        "broker_id": broker_id,
        "is_leader": broker_id == leader,
        "is_in_sync": broker_id in isr,
        "broker": {"related": url(node, f"{cluster_path(node)}/brokers/{broker_id}")},
    }
    if leo is not None:
        body["log_end_offset"] = leo
    return body


async def _partition_replicas(request: web.Request) -> list[dict[str, Any]]:
    node = node_of(request)
    topic, partition_id = request.match_info["topic_name"], partition_param(request)
    partition = await node.describer.describe_partition(topic, partition_id)
    leos = {row["broker_id"]: row["log_end_offset"] for row in partition.replicas_state or ()}
    return [
        _replica_body(node, topic, partition_id, broker_id, partition.leader_id, partition.isr, leos.get(broker_id))
        for broker_id in partition.replicas
    ]


@routes.get(
    PARTITIONS + "/{partition_id}/replicas",
    Operation(
        "A partition's replicas", (Reply(200, "replicas", {JSON: ReplicaDataList}),), (CLUSTER, TOPIC, PARTITION)
    ),
)
async def list_replicas(request: web.Request) -> web.Response:
    node = node_of(request)
    path = f"{topic_path(node, request.match_info['topic_name'])}/partitions/{partition_param(request)}/replicas"
    return web.json_response(list_of("KafkaReplicaList", node, path, await _partition_replicas(request)))


@routes.get(
    PARTITIONS + "/{partition_id}/replicas/{broker_id}",
    Operation(
        "A partition's replica on one broker; 404 when the broker holds none",
        (Reply(200, "replica", {JSON: ReplicaData}),),
        (CLUSTER, TOPIC, PARTITION, BROKER),
    ),
)
async def get_replica(request: web.Request) -> web.Response:
    broker_id = path_int(request, "broker_id")
    for replica in await _partition_replicas(request):
        if replica["broker_id"] == broker_id:
            return web.json_response(replica)
    topic, partition = request.match_info["topic_name"], partition_param(request)
    raise NotFound(
        f"broker {broker_id} holds no replica of {topic}-{partition}",
        topic_name=topic,
        partition_id=partition,
        broker_id=broker_id,
    )


@routes.get(
    "/v3/clusters/{cluster_id}/brokers/{broker_id}/partition-replicas",
    Operation(
        "The replicas a broker holds (only topics the principal may DESCRIBE)",
        (Reply(200, "replicas", {JSON: ReplicaDataList}),),
        (CLUSTER, BROKER),
    ),
)
async def list_broker_replicas(request: web.Request) -> web.Response:
    node = node_of(request)
    broker_id = path_int(request, "broker_id")
    visible = describable_topics(request)
    items = [
        _replica_body(node, record.topic, record.partition, broker_id, record.leader, record.isr, None)
        for record in node.catalog.partition_records()
        if broker_id in record.replicas and visible(record.topic)
    ]
    path = f"{cluster_path(node)}/brokers/{broker_id}/partition-replicas"
    return web.json_response(list_of("KafkaReplicaList", node, path, items))
