"""Topic configs: list, get, set, reset, batch alter, and every topic's at once (``/topics/-/configs``).

Each config is listed with Kafka's ``source`` and ``synonyms`` (``TopicConfigs.describe``).
An alter goes to the controller as a change of the topic record, so every broker's
view applies it to its replicas (``ControllerGateway.alter_topic_configs``); every
config may change while the topic lives, as in Kafka, so none is ``is_read_only``. A
refused value answers 400 INVALID_CONFIG naming it. A batch is all or nothing, and
``validate_only`` checks it and changes nothing. ``DELETE`` on a config resets it to
the broker's default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from broker.errors import InvalidConfig, NotFound
from broker.security.acl import AclOperation, Resource
from broker.server.admin_bodies import TopicConfigData, TopicConfigDataList, config_body, list_of, topic_path
from broker.server.api_routes import CLUSTER, JSON, TOPIC, Body, Operation, Reply, RouteTable, path_param
from broker.server.authorization import may
from broker.server.params import node_of, read_model
from broker.server.resources import cluster_path

if TYPE_CHECKING:
    from broker.server.host import HttpHost

CONFIGS = "/v3/clusters/{cluster_id}/topics/{topic_name}/configs"
NAME = path_param("name", {"type": "string"}, "a topic config name, e.g. retention.ms")
routes = RouteTable()


class UpdateConfigRequestData(BaseModel):
    """``value`` null or absent resets the config to its default, as ``DELETE`` does."""

    model_config = ConfigDict(extra="forbid")

    value: str | None = None


class AlterConfigEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    value: str | None = None
    operation: Literal["SET", "DELETE"] | None = Field(
        None, description="default SET; a SET without a value is 400 INVALID_CONFIG"
    )


class AlterConfigBatchRequestData(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data: list[AlterConfigEntry]
    validate_only: StrictBool = False

    def changes(self) -> dict[str, str | None]:
        """Name to new value (None = reset); a name given twice, or a SET without a value, is refused."""
        changes: dict[str, str | None] = {}
        for entry in self.data:
            if entry.name in changes:
                raise InvalidConfig(f"config {entry.name} is given twice in one alter", config=entry.name)
            if entry.operation != "DELETE" and entry.value is None:
                raise InvalidConfig(
                    f"SET of config {entry.name} needs a value; use operation DELETE to reset it", config=entry.name
                )
            changes[entry.name] = None if entry.operation == "DELETE" else entry.value
        return changes


def _topic_configs(node: HttpHost, topic: str) -> list[dict]:
    configs = node.catalog.topic(topic).configs
    path = f"{topic_path(node, topic)}/configs"
    return [
        config_body(
            node,
            "KafkaTopicConfig",
            path,
            entry,
            read_only=False,
            topic_name=topic,
        )
        for entry in node.topic_configs.describe(configs)
    ]


@routes.get(
    "/v3/clusters/{cluster_id}/topics/-/configs",
    Operation(
        "Every topic's configs (only topics the principal may DESCRIBE_CONFIGS)",
        (Reply(200, "configs", {JSON: TopicConfigDataList}),),
        (CLUSTER,),
    ),
)
async def list_all_topic_configs(request: web.Request) -> web.Response:
    node = node_of(request)
    items = [
        item
        for topic in node.catalog.topic_names()
        if may(request, AclOperation.DESCRIBE_CONFIGS, Resource.topic(topic))
        for item in _topic_configs(node, topic)
    ]
    return web.json_response(list_of("KafkaTopicConfigList", node, f"{cluster_path(node)}/topics/-/configs", items))


@routes.get(
    CONFIGS, Operation("A topic's configs", (Reply(200, "configs", {JSON: TopicConfigDataList}),), (CLUSTER, TOPIC))
)
async def list_topic_configs(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    items = _topic_configs(node, topic)
    return web.json_response(list_of("KafkaTopicConfigList", node, f"{topic_path(node, topic)}/configs", items))


@routes.post(
    CONFIGS + ":alter",
    Operation(
        "Set or reset several configs, all or nothing; validate_only changes nothing",
        (Reply(204, "altered (or, with validate_only, valid)"),),
        (CLUSTER, TOPIC),
        Body({JSON: AlterConfigBatchRequestData}),
    ),
)
async def alter_topic_configs(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, AlterConfigBatchRequestData)
    changes = body.changes()
    await node.controller_gateway.alter_topic_configs(
        request.match_info["topic_name"], changes, validate_only=body.validate_only
    )
    return web.Response(status=204)


@routes.get(
    CONFIGS + "/{name}",
    Operation("One topic config", (Reply(200, "config", {JSON: TopicConfigData}),), (CLUSTER, TOPIC, NAME)),
)
async def get_topic_config(request: web.Request) -> web.Response:
    node = node_of(request)
    topic, name = request.match_info["topic_name"], request.match_info["name"]
    for item in _topic_configs(node, topic):
        if item["name"] == name:
            return web.json_response(item)
    raise NotFound(f"config {name!r} cannot be found for topic {topic!r}", topic_name=topic, name=name)


@routes.route(
    "PUT",
    CONFIGS + "/{name}",
    Operation(
        "Set one topic config (a null value resets it)",
        (Reply(204, "updated"),),
        (CLUSTER, TOPIC, NAME),
        Body({JSON: UpdateConfigRequestData}),
    ),
)
async def update_topic_config(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, UpdateConfigRequestData)
    await node.controller_gateway.alter_topic_configs(
        request.match_info["topic_name"], {request.match_info["name"]: body.value}
    )
    return web.Response(status=204)


@routes.delete(
    CONFIGS + "/{name}",
    Operation("Reset one topic config to its default", (Reply(204, "reset"),), (CLUSTER, TOPIC, NAME)),
)
async def reset_topic_config(request: web.Request) -> web.Response:
    node = node_of(request)
    await node.controller_gateway.alter_topic_configs(
        request.match_info["topic_name"], {request.match_info["name"]: None}
    )
    return web.Response(status=204)
