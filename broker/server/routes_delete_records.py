"""``POST /v3/clusters/{c}/topics/{t}/partitions/{p}/records:delete``: Kafka's DeleteRecords over HTTP.

The same operation as the Kafka door's DeleteRecords (``Partition.delete_records`` on
the partition's leader): the log start offset rises to ``before_offset`` (never past the
high watermark), readers below it get ``OFFSET_OUT_OF_RANGE``, and the answer's
``low_watermark`` is the smallest log start among the in-sync replicas once they all
followed. Any broker takes the call: one that does not lead the partition passes it to
the leader, as the caller; a passed-on call that finds no leader here answers
``NOT_LEADER_OR_FOLLOWER`` naming it, never a second hop. DELETE on the topic, as Kafka's.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from broker.errors import LeaderNotAvailable, NotLeaderOrFollower
from broker.replica_io.partition import DELETE_TO_HIGH_WATERMARK
from broker.server.api_routes import CLUSTER, JSON, PARTITION, TOPIC, Body, Operation, Reply, RouteTable
from broker.server.coordinator_forwarding import forwarded, relay_as_caller
from broker.server.params import JsonInt, check_partition, node_of, partition_param, read_model
from broker.topics.policy import check_delete_records

routes = RouteTable()

MAX_TIMEOUT_MS = 30_000
"""Below the relay's own timeout, so a passed-on call always answers."""


class DeleteRecordsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    before_offset: JsonInt = Field(
        ge=DELETE_TO_HIGH_WATERMARK,
        description="every record below this offset goes; -1: below the high watermark (all that was acknowledged)",
    )
    timeout_ms: JsonInt = Field(
        MAX_TIMEOUT_MS,
        ge=0,
        le=MAX_TIMEOUT_MS,
        description="how long to wait for the in-sync replicas to follow (the records are gone from the leader at once)",
    )


class DeletedRecords(BaseModel):
    topic_name: str
    partition_id: int
    low_watermark: int = Field(description="the smallest log start offset among the in-sync replicas")


@routes.post(
    "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records:delete",
    Operation(
        "Delete every record below an offset (Kafka's DeleteRecords): the log start rises to it, never past the "
        "high watermark (416 OFFSET_OUT_OF_RANGE); 504 REQUEST_TIMED_OUT when the in-sync replicas did not follow "
        "in time. Internal topics are refused with 400 INVALID_TOPIC_EXCEPTION.",
        (Reply(200, "the low watermark, once every in-sync replica followed", {JSON: DeletedRecords}),),
        (CLUSTER, TOPIC, PARTITION),
        Body({JSON: DeleteRecordsRequest}),
    ),
)
async def delete_records(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    partition = partition_param(request)
    check_partition(node, topic, partition)
    check_delete_records(topic)
    body = await read_model(request, DeleteRecordsRequest)
    try:
        low_watermark = await node.router.delete_records(topic, partition, body.before_offset, body.timeout_ms)
    except NotLeaderOrFollower as error:
        leader_url = node.catalog.inter_broker_url(error.details.get("leader_id", -1))
        if forwarded(request) or leader_url is None:
            raise
        try:
            return await relay_as_caller(request, leader_url)
        except (TimeoutError, aiohttp.ClientError, OSError) as failure:
            raise LeaderNotAvailable(
                f"could not reach the leader of {topic}-{partition} at {leader_url}: {failure}",
                topic_name=topic,
                partition_id=partition,
            ) from None
    return web.json_response({"topic_name": topic, "partition_id": partition, "low_watermark": low_watermark})
