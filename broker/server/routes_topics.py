"""Topics (list, create, describe, delete), their partitions, and partition offsets.

``POST /v3/clusters/{c}/topics`` takes the REST Proxy body
``{"topic_name", "partitions_count"?, "replication_factor"?, "configs"?: [{"name","value"}]}``;
absent counts take the broker's ``topic_defaults``. The node is the authority on
names, counts and configs (it knows how many brokers are live); this layer only
shapes the request.

``POST /v3/clusters/{c}/partitions:elect-preferred`` (body ``{"topic_name"}`` optional,
every topic without it) moves leadership back to each partition's preferred replica
(``replicas[0]``) where it is alive and in sync, and answers ``{"elected": [...]}``
with the partition records that changed; an empty list means nothing needed moving.

``GET …/partitions/{p}/offset`` answers ``earliest_offset`` (log start), ``latest_offset``
(the high watermark: the end of what a reader can see) and ``log_end_offset``; with
``?timestamp=MS`` it adds ``offset``, the first visible offset whose timestamp is at
or after ``MS`` (Kafka's ListOffsets), or null when there is none below the HW.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, field_validator

from broker.server.params import node_of, partition_param, query_int, read_model
from broker.server.resources import cluster_path, list_body, partition_body, topic_body
from config.topic import topic_config_field


class ConfigEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    value: str | int | float | bool | None = None


class CreateTopicRequest(BaseModel):
    """Unknown fields are refused: a ``validate_only`` or a misspelt count must not create a topic unnoticed."""

    model_config = ConfigDict(extra="forbid")

    topic_name: str
    partitions_count: int | None = None
    replication_factor: int | None = None
    configs: list[ConfigEntry] = Field(default_factory=list)

    def config_strings(self) -> dict[str, str]:
        """Configs as Kafka's strings; a null value means "use the default" and is dropped, its name still checked."""
        strings: dict[str, str] = {}
        for entry in self.configs:
            if entry.value is None:
                topic_config_field(entry.name)
                continue
            strings[entry.name] = str(entry.value).lower() if isinstance(entry.value, bool) else str(entry.value)
        return strings


class ElectPreferredRequest(BaseModel):
    """``topic_name`` absent means every topic; an explicit null or an unknown field is a client mistake (422)."""

    model_config = ConfigDict(extra="forbid")

    topic_name: str | None = None

    @field_validator("topic_name", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must be a topic name; leave the field out to elect for every topic")
        return value


async def list_topics(request: web.Request) -> web.Response:
    node = node_of(request)
    items = [topic_body(node, topic) for topic in await node.list_topics()]
    return web.json_response(list_body("KafkaTopicList", node, f"{cluster_path(node)}/topics", items))


async def create_topic(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, CreateTopicRequest)
    defaults = node.settings.topic_defaults
    topic = await node.create_topic(
        body.topic_name,
        defaults.partitions if body.partitions_count is None else body.partitions_count,
        defaults.replication_factor if body.replication_factor is None else body.replication_factor,
        body.config_strings(),
    )
    response = web.json_response(topic_body(node, topic), status=201)
    response.headers["Location"] = f"{node.advertised_url}{cluster_path(node)}/topics/{topic.name}"
    return response


async def get_topic(request: web.Request) -> web.Response:
    node = node_of(request)
    return web.json_response(topic_body(node, await node.describe_topic(request.match_info["topic_name"])))


async def delete_topic(request: web.Request) -> web.Response:
    node = node_of(request)
    await node.delete_topic(request.match_info["topic_name"])
    return web.Response(status=204)


async def list_partitions(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = await node.describe_topic(request.match_info["topic_name"])
    items = [partition_body(node, partition) for partition in topic.partitions]
    path = f"{cluster_path(node)}/topics/{topic.name}/partitions"
    return web.json_response(list_body("KafkaPartitionList", node, path, items))


async def get_partition(request: web.Request) -> web.Response:
    node = node_of(request)
    partition = await node.describe_partition(request.match_info["topic_name"], partition_param(request))
    return web.json_response(partition_body(node, partition))


async def get_offsets(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    partition_id = partition_param(request)
    timestamp_ms = query_int(request.query, "timestamp", None)
    partition = await node.describe_partition(topic, partition_id)
    body: dict[str, Any] = {
        "cluster_id": node.cluster_id,
        "topic_name": topic,
        "partition_id": partition.partition,
        "earliest_offset": partition.log_start_offset,
        "latest_offset": partition.high_watermark,
        "log_end_offset": partition.log_end_offset,
    }
    if timestamp_ms is not None:
        body["timestamp"] = timestamp_ms
        body["offset"] = await node.offset_for_timestamp(topic, partition.partition, timestamp_ms)
    return web.json_response(body)


async def elect_preferred_leaders(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, ElectPreferredRequest) if request.body_exists else ElectPreferredRequest()
    elected = await node.elect_preferred_leaders(body.topic_name)
    return web.json_response({"elected": [_elected_body(record) for record in elected["elected"]]})


def _elected_body(record: dict[str, Any]) -> dict[str, Any]:
    """A partition record in the REST names used by the partition resources."""
    return {
        "topic_name": record["topic"],
        "partition_id": record["partition"],
        "leader_id": record["leader"],
        "leader_epoch": record["leader_epoch"],
        "replicas": record["replicas"],
        "isr": record["isr"],
    }


def add_routes(app: web.Application) -> None:
    topics = "/v3/clusters/{cluster_id}/topics"
    app.router.add_get(topics, list_topics)
    app.router.add_post(topics, create_topic)
    app.router.add_get(topics + "/{topic_name}", get_topic)
    app.router.add_delete(topics + "/{topic_name}", delete_topic)
    app.router.add_get(topics + "/{topic_name}/partitions", list_partitions)
    app.router.add_get(topics + "/{topic_name}/partitions/{partition_id}", get_partition)
    app.router.add_get(topics + "/{topic_name}/partitions/{partition_id}/offset", get_offsets)
    app.router.add_post("/v3/clusters/{cluster_id}/partitions:elect-preferred", elect_preferred_leaders)
