"""Topics (list, create, describe, delete), their partitions, and partition offsets.

``POST /v3/clusters/{c}/topics`` takes the REST Proxy body
``{"topic_name", "partitions_count"?, "replication_factor"?, "replicas_assignments"?: {"0": [1, 2]},
"configs"?: [{"name","value"}], "validate_only"?}``; absent counts take the broker's defaults
(``topic_defaults`` overlaid with the cluster-wide dynamic ones).
``replicas_assignments`` names each partition's replicas instead of the counts, by Kafka's rules
(``broker.cluster.replica_assignment``): 400 ``INVALID_REQUEST`` beside a count, 400
``INVALID_REPLICA_ASSIGNMENT`` (error code 40002) naming what is wrong otherwise. With
``validate_only: true`` every check of a creation runs (``check_new_topic``, the one
Kafka's CreateTopics uses) and nothing is created: the answer is 200 and the topic as it
would be, where a creation answers 201 and sets ``Location``. An existing topic is
400 ``TOPIC_ALREADY_EXISTS`` (error code 40002, as the REST Proxy answers it). The node is the authority on
names, counts and configs (it knows how many brokers are live); this layer only
shapes the request.

``POST /v3/clusters/{c}/partitions:elect-preferred`` (body ``{"topic_name"}`` optional,
every topic without it) moves leadership back to each partition's preferred replica
(``replicas[0]``) where it is alive and in sync, and answers ``{"elected": [...]}``
with the partition records that changed; an empty list means nothing needed moving.

``GET …/partitions/{p}/offset`` answers the spec's ``PartitionWithOffsets``: ``earliest_offset`` (log start), ``latest_offset``
(the high watermark: the end of what a reader can see) and ``log_end_offset``; with
``?timestamp=MS`` it adds ``offset``, the first visible offset whose timestamp is at
or after ``MS`` (Kafka's ListOffsets), or null when there is none below the HW.
"""

from __future__ import annotations

from typing import Annotated, Any

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, WithJsonSchema, field_validator
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from broker.cluster.placement import MAX_PARTITIONS_PER_TOPIC
from broker.cluster.records import MAX_TOPIC_NAME_LENGTH
from broker.cluster.replica_assignment import check_exclusive, ordered_assignment
from broker.errors import TopicAlreadyExists
from broker.security.acl import AclOperation, Resource
from broker.server.api_routes import (
    CLUSTER,
    JSON,
    PARTITION,
    TOPIC,
    Body,
    Operation,
    Reply,
    RouteTable,
    link,
    query_param,
)
from broker.server.authorization import describable_topics, may, require
from broker.server.params import INT32_MAX, INT64_MAX, node_of, partition_param, query_int, read_model
from broker.server.resources import cluster_path, list_body, metadata, partition_resource, topic_body, topic_resource
from broker.server.responses import ElectedLeaders, Offsets, Partition, ResourceList, Topic
from broker.topics.new_topic import NewTopic
from config.topic import TOPIC_CONFIG_NAMES, TopicConfig, topic_config_field

TOPICS = "/v3/clusters/{cluster_id}/topics"
PARTITIONS = TOPICS + "/{topic_name}/partitions"
INTERNAL_TOPIC_REFUSAL = (
    "Internal topics (__consumer_offsets) belong to the broker: creating one under its name, appending to one "
    "and deleting one are refused with 400 INVALID_TOPIC_EXCEPTION."
)
routes = RouteTable()


def _created_topic_links() -> dict[str, Any]:
    """From a created topic to the calls that take its name; partition 0 always exists."""
    topic = {"cluster_id": "$request.path.cluster_id", "topic_name": "$response.body#/topic_name"}
    partition = {**topic, "partition_id": "0"}
    return {
        "DescribeTopic": link(TOPICS + "/{topic_name}", "get", **topic),
        "ListPartitions": link(PARTITIONS, "get", **topic),
        "ProduceRecords": link(TOPICS + "/{topic_name}/records", "post", **topic),
        "ProduceBatch": link(TOPICS + "/{topic_name}/records:batch", "post", **topic),
        "ReadRecords": link(PARTITIONS + "/{partition_id}/records", "get", **partition),
        "PartitionOffsets": link(PARTITIONS + "/{partition_id}/offset", "get", **partition),
        "DeleteTopic": link(TOPICS + "/{topic_name}", "delete", **topic),
    }


def _known_configs() -> dict[str, Any]:
    """One ``{name, value}`` per known topic config, the value typed and bounded as ``TopicConfig`` checks it."""
    fields = TopicConfig.model_json_schema()["properties"]
    variants = []
    for name, field in sorted(TOPIC_CONFIG_NAMES.items()):
        value = {key: item for key, item in fields[field].items() if key not in ("title", "default")}
        variants.append(
            {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"const": name}, "value": {"anyOf": [value, {"type": "null"}]}},
                "additionalProperties": False,
            }
        )
    return {
        "anyOf": variants,
        "description": "a null value means the default; min.insync.replicas above the replication factor is "
        "refused with 400 INVALID_CONFIG",
    }


class ConfigEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    value: str | int | float | bool | None = None


PARTITION_ID_KEY = r"^(0|[1-9][0-9]{0,8})$"
"""A partition id as a JSON object key: a decimal integer, no sign, no leading zero, so two keys never name one
partition."""
ReplicasAssignments = Annotated[
    dict[Annotated[str, StringConstraints(pattern=PARTITION_ID_KEY)], list[StrictInt]],
    WithJsonSchema(
        {
            "type": "object",
            "patternProperties": {PARTITION_ID_KEY: {"type": "array", "items": {"type": "integer"}}},
            "additionalProperties": False,
        }
    ),
]


class CreateTopicRequest(BaseModel):
    """Unknown fields are refused: a ``validate_only`` or a misspelt count must not create a topic unnoticed.

    Names, counts, assignments and configs are checked by the node and the controller (400
    INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT,
    INVALID_CONFIG); their rules are stated here as schema so the document shows what the broker accepts.
    Broker ids and partition-id keys are strict: a ``"1"`` or ``true`` standing in for a number is 422.
    """

    model_config = ConfigDict(extra="forbid")

    topic_name: str = Field(
        json_schema_extra={"pattern": f"^[a-zA-Z0-9._-]{{1,{MAX_TOPIC_NAME_LENGTH}}}$", "not": {"enum": [".", ".."]}}
    )
    partitions_count: int | None = Field(
        None,
        json_schema_extra={"minimum": 1, "maximum": MAX_PARTITIONS_PER_TOPIC},
        description="default topic_defaults.partitions",
    )
    replication_factor: int | None = Field(
        None,
        json_schema_extra={"minimum": 1, "maximum": INT32_MAX},
        description="default topic_defaults.replication_factor; at most the number of live brokers",
    )
    replicas_assignments: ReplicasAssignments | None = Field(
        None,
        description="partition id -> the broker ids of its replicas, the first its preferred leader; instead of "
        "partitions_count and replication_factor (400 INVALID_REQUEST with either). 400 INVALID_REPLICA_ASSIGNMENT "
        "unless the ids are 0..n-1, every partition has as many replicas, none twice, and every broker is live",
    )
    configs: list[Annotated[ConfigEntry, WithJsonSchema(_known_configs())]] = Field(default_factory=list)
    validate_only: bool = Field(False, description="check everything a creation checks, create nothing (200)")

    def assignment(self) -> list[list[int]] | None:
        """The manual assignment as replica lists by partition, None without one (an empty one is none, as in
        the REST Proxy); ``InvalidRequest`` beside a count, ``InvalidReplicaAssignment`` when malformed."""
        if not self.replicas_assignments:
            return None
        check_exclusive(self.partitions_count, self.replication_factor)
        return ordered_assignment((int(p), brokers) for p, brokers in self.replicas_assignments.items())

    def config_strings(self) -> dict[str, str]:
        """Configs as Kafka's strings; a null value means "use the default" and is dropped, its name still checked."""
        strings: dict[str, str] = {}
        for entry in self.configs:
            if entry.value is None:
                topic_config_field(entry.name)
                continue
            strings[entry.name] = str(entry.value).lower() if isinstance(entry.value, bool) else str(entry.value)
        return strings


def _without_default(schema: JsonDict) -> None:
    """An absent field is not a null one: the schema shows no default a client could send back."""
    del schema["default"]


class ElectPreferredRequest(BaseModel):
    """``topic_name`` absent means every topic; an explicit null or an unknown field is a client mistake (422)."""

    model_config = ConfigDict(extra="forbid")

    topic_name: str | SkipJsonSchema[None] = Field(
        None, description="only this topic; absent: every topic", json_schema_extra=_without_default
    )

    @field_validator("topic_name", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must be a topic name; leave the field out to elect for every topic")
        return value


@routes.get(TOPICS, Operation("List topics", (Reply(200, "topics", {JSON: ResourceList[Topic]}),), (CLUSTER,)))
async def list_topics(request: web.Request) -> web.Response:
    node = node_of(request)
    visible = describable_topics(request)
    topics = node.catalog.topic_records()
    items = [topic_body(node, topics[name]) for name in sorted(topics) if visible(name)]
    return web.json_response(list_body("KafkaTopicList", node, f"{cluster_path(node)}/topics", items))


@routes.post(
    TOPICS,
    Operation(
        "Create a topic; 400 when the replication factor exceeds the live brokers or a config is refused",
        (
            Reply(201, "created", {JSON: Topic}, links=_created_topic_links()),
            Reply(200, "validate_only: the topic as it would be created; nothing created", {JSON: Topic}),
        ),
        (CLUSTER,),
        Body({JSON: CreateTopicRequest}),
        INTERNAL_TOPIC_REFUSAL,
    ),
)
async def create_topic(request: web.Request) -> web.Response:
    """CREATE on the cluster or on the topic, as in Kafka; and, as in Kafka, an existing topic the caller
    may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED rather than telling it the topic exists."""
    node = node_of(request)
    body = await read_model(request, CreateTopicRequest)
    if not may(request, AclOperation.CREATE, Resource.cluster()):
        require(request, AclOperation.CREATE, Resource.topic(body.topic_name))
    new = NewTopic.requested(
        body.topic_name,
        body.partitions_count,
        body.replication_factor,
        body.config_strings(),
        body.assignment(),
        node.topic_configs.defaults,
    )
    try:
        if body.validate_only:
            node.controller_gateway.check_new_topic(new)
            would_be = topic_resource(
                node,
                new.name,
                internal=False,
                configs=new.configs,
                replication_factor=new.replication_factor,
                partitions_count=new.partitions_count,
            )
            return web.json_response(would_be)
        await node.controller_gateway.create_topic(new)
    except TopicAlreadyExists:
        require(request, AclOperation.DESCRIBE, Resource.topic(body.topic_name))
        raise
    response = web.json_response(topic_body(node, node.catalog.topic(new.name)), status=201)
    response.headers["Location"] = f"{node.advertised_url}{cluster_path(node)}/topics/{new.name}"
    return response


@routes.get(
    TOPICS + "/{topic_name}", Operation("Describe a topic", (Reply(200, "topic", {JSON: Topic}),), (CLUSTER, TOPIC))
)
async def get_topic(request: web.Request) -> web.Response:
    node = node_of(request)
    return web.json_response(topic_body(node, node.catalog.topic(request.match_info["topic_name"])))


@routes.delete(
    TOPICS + "/{topic_name}",
    Operation(
        "Delete a topic and its data", (Reply(204, "deleted"),), (CLUSTER, TOPIC), description=INTERNAL_TOPIC_REFUSAL
    ),
)
async def delete_topic(request: web.Request) -> web.Response:
    node = node_of(request)
    await node.controller_gateway.delete_topic(request.match_info["topic_name"])
    return web.Response(status=204)


@routes.get(
    PARTITIONS,
    Operation(
        "List partitions with offsets", (Reply(200, "partitions", {JSON: ResourceList[Partition]}),), (CLUSTER, TOPIC)
    ),
)
async def list_partitions(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = await node.describer.describe_topic(request.match_info["topic_name"])
    items = [partition_resource(node, partition) for partition in topic.partitions]
    path = f"{cluster_path(node)}/topics/{topic.name}/partitions"
    return web.json_response(list_body("KafkaPartitionList", node, path, items))


@routes.get(
    PARTITIONS + "/{partition_id}",
    Operation("Describe a partition", (Reply(200, "partition", {JSON: Partition}),), (CLUSTER, TOPIC, PARTITION)),
)
async def get_partition(request: web.Request) -> web.Response:
    node = node_of(request)
    partition = await node.describer.describe_partition(request.match_info["topic_name"], partition_param(request))
    return web.json_response(partition_resource(node, partition))


@routes.get(
    PARTITIONS + "/{partition_id}/offset",
    Operation(
        "Earliest offset, high watermark, log end offset; offset for a timestamp",
        (Reply(200, "offsets", {JSON: Offsets}),),
        (
            CLUSTER,
            TOPIC,
            PARTITION,
            query_param(
                "timestamp",
                {"type": "integer", "minimum": 0, "maximum": INT64_MAX, "format": "int64"},
                "ms since the epoch",
            ),
        ),
    ),
)
async def get_offsets(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    partition_id = partition_param(request)
    timestamp_ms = query_int(request.query, "timestamp", None)
    partition = await node.describer.leader_offsets(topic, partition_id)
    path = f"{cluster_path(node)}/topics/{topic}/partitions/{partition.partition}/offset"
    body: dict[str, Any] = {
        "kind": "KafkaPartitionOffsets",
        "metadata": metadata(node, path, f"topic={topic}", f"partition={partition.partition}"),
        "cluster_id": node.cluster_id,
        "topic_name": topic,
        "partition_id": partition.partition,
        "earliest_offset": partition.log_start_offset,
        "latest_offset": partition.high_watermark,
        "last_stable_offset": partition.last_stable_offset,
        "log_end_offset": partition.log_end_offset,
    }
    if timestamp_ms is not None:
        body["timestamp"] = timestamp_ms
        body["offset"] = await node.router.offset_for_timestamp(topic, partition.partition, timestamp_ms)
    return web.json_response(body)


@routes.post(
    "/v3/clusters/{cluster_id}/partitions:elect-preferred",
    Operation(
        "Move leadership back to each partition's preferred replica (replicas[0]) where it is alive and in sync",
        (Reply(200, "the partitions whose leader changed", {JSON: ElectedLeaders}),),
        (CLUSTER,),
        Body({JSON: ElectPreferredRequest}, required=False),
    ),
)
async def elect_preferred_leaders(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, ElectPreferredRequest) if request.body_exists else ElectPreferredRequest()
    elected = await node.controller_gateway.elect_preferred_leaders(body.topic_name)
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
