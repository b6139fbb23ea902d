"""Partition reassignments: the REST Proxy's listings, and highwater's write that starts, replaces or cancels moves.

A move is the controller's (``broker.cluster.reassignment``): while a partition moves
its replicas are the target followed by the original replicas it leaves out, and the
listings show each moving partition's ``adding_replicas`` and ``removing_replicas``; a
partition that is not moving has no reassignment (404, as the REST Proxy answers).

``POST …/topics/-/partitions/-/reassignment:alter`` takes ``{"data": [{"topic_name",
"partition_id", "replicas"}]}``: a broker list is the partition's target, ``null`` cancels
its move. The whole request is checked before anything moves (an unknown topic or
partition, a broker that is not alive, a broker named twice, fewer replicas than the
topic's min.insync.replicas needs, a partition named twice: a 4xx naming it), and it
is answered 202 with each partition's reassignment as it stands once the move started
(empty lists where the move completed at once, or was cancelled). A target of another
length than the partition's replicas changes its replication factor, as in Kafka. ALTER on the cluster
may move replicas, as Kafka's ``AlterPartitionReassignments`` requires; DESCRIBE on a
topic shows its moves.
"""

from __future__ import annotations

from collections import Counter

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from broker.cluster.reassignment import PartitionMove, is_moving
from broker.errors import InvalidRequest, NotFound
from broker.server.admin_bodies import ReassignmentData, ReassignmentDataList, list_of, reassignment_body, topic_path
from broker.server.api_routes import CLUSTER, JSON, PARTITION, TOPIC, Body, Operation, Reply, RouteTable
from broker.server.authorization import describable_topics
from broker.server.params import INT32_MAX, JsonInt, node_of, partition_param, read_model
from broker.server.resources import cluster_path

PARTITIONS = "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions"
ALL_PARTITIONS = "/v3/clusters/{cluster_id}/topics/-/partitions/-/reassignment"
routes = RouteTable()


class ReassignmentTarget(BaseModel):
    """One partition's target replicas (the first is its preferred leader), or null to cancel its move."""

    model_config = ConfigDict(extra="forbid")

    topic_name: str
    partition_id: JsonInt = Field(ge=0, le=INT32_MAX)
    replicas: list[JsonInt] | None


class AlterReassignmentsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data: list[ReassignmentTarget] = Field(min_length=1)


@routes.get(
    ALL_PARTITIONS,
    Operation(
        "Ongoing reassignments (only topics the principal may DESCRIBE)",
        (Reply(200, "the moving partitions", {JSON: ReassignmentDataList}),),
        (CLUSTER,),
    ),
)
async def list_all_reassignments(request: web.Request) -> web.Response:
    node = node_of(request)
    visible = describable_topics(request)
    items = [
        reassignment_body(node, record)
        for record in node.catalog.partition_records()
        if is_moving(record) and visible(record.topic)
    ]
    path = f"{cluster_path(node)}/topics/-/partitions/-/reassignment"
    return web.json_response(list_of("KafkaReassignmentList", node, path, items))


@routes.get(
    PARTITIONS + "/-/reassignment",
    Operation(
        "A topic's ongoing reassignments",
        (Reply(200, "the topic's moving partitions", {JSON: ReassignmentDataList}),),
        (CLUSTER, TOPIC),
    ),
)
async def list_topic_reassignments(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = node.catalog.topic(request.match_info["topic_name"])
    records = (node.catalog.known_partition_record(topic.name, p) for p in range(topic.partitions_count))
    items = [reassignment_body(node, record) for record in records if record is not None and is_moving(record)]
    path = f"{topic_path(node, topic.name)}/partitions/-/reassignment"
    return web.json_response(list_of("KafkaReassignmentList", node, path, items))


@routes.get(
    PARTITIONS + "/{partition_id}/reassignment",
    Operation(
        "A partition's ongoing reassignment; 404 when it is not moving",
        (Reply(200, "its move", {JSON: ReassignmentData}),),
        (CLUSTER, TOPIC, PARTITION),
    ),
)
async def get_reassignment(request: web.Request) -> web.Response:
    node = node_of(request)
    topic, partition = request.match_info["topic_name"], partition_param(request)
    record = node.catalog.partition_record(topic, partition)
    if not is_moving(record):
        raise NotFound(
            f"no reassignment is under way for {topic}-{partition}: its replicas are {record.replicas}",
            topic_name=topic,
            partition_id=partition,
        )
    return web.json_response(reassignment_body(node, record))


@routes.post(
    ALL_PARTITIONS + ":alter",
    Operation(
        "Start, replace or cancel (replicas null) partition moves, all or nothing",
        (Reply(202, "each partition's reassignment once its move started", {JSON: ReassignmentDataList}),),
        (CLUSTER,),
        Body({JSON: AlterReassignmentsRequest}),
    ),
)
async def alter_reassignments(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, AlterReassignmentsRequest)
    named = Counter((target.topic_name, target.partition_id) for target in body.data)
    repeated = next((key for key, count in named.items() if count > 1), None)
    if repeated is not None:
        raise InvalidRequest(
            f"{repeated[0]}-{repeated[1]} is named more than once; a request gives each partition one target",
            topic_name=repeated[0],
            partition_id=repeated[1],
        )
    moves = [PartitionMove(topic=t.topic_name, partition=t.partition_id, replicas=t.replicas) for t in body.data]
    records = await node.controller_gateway.alter_reassignments(moves)
    path = f"{cluster_path(node)}/topics/-/partitions/-/reassignment"
    items = [reassignment_body(node, record) for record in records]
    return web.json_response(list_of("KafkaReassignmentList", node, path, items), status=202)
