"""``PATCH /v3/clusters/{c}/topics/{t}``: grow a topic's partition count (Kafka's CreatePartitions).

Only growth: a count equal to or below the current one is 400 INVALID_PARTITIONS and
changes nothing, since removing a partition would lose its records and move keys. The
new partitions are placed by the same placement code as a creation
(``placement.assign_added_partitions``), start empty, and are produceable and
readable as soon as the answer arrives (the call returns once this broker's view has
their records). Consumer groups subscribed to the topic get them at their next
heartbeat: the coordinator sees the new count and bumps the group epoch, the
rebalance Kafka's metadata change triggers.
"""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC
from broker.server.api_routes import CLUSTER, JSON, TOPIC, Body, Operation, Reply, RouteTable
from broker.server.params import JsonInt, node_of, read_model
from broker.server.resources import topic_body
from broker.server.responses import Topic

routes = RouteTable()


class UpdatePartitionCountRequestData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partitions_count: JsonInt = Field(
        json_schema_extra={"minimum": 1, "maximum": MAX_PARTITIONS_PER_TOPIC},
        description="the new count; larger than the current one",
    )


@routes.route(
    "PATCH",
    "/v3/clusters/{cluster_id}/topics/{topic_name}",
    Operation(
        "Grow a topic's partition count; 400 INVALID_PARTITIONS unless it grows",
        (Reply(200, "the topic with its new partitions", {JSON: Topic}),),
        (CLUSTER, TOPIC),
        Body({JSON: UpdatePartitionCountRequestData}),
    ),
)
async def update_partition_count(request: web.Request) -> web.Response:
    node = node_of(request)
    name = request.match_info["topic_name"]
    body = await read_model(request, UpdatePartitionCountRequestData)
    await node.controller_gateway.create_partitions(name, body.partitions_count)
    return web.json_response(topic_body(node, node.catalog.topic(name)))
