"""Broker configs (``/brokers/{b}/configs…``, ``/brokers/-/configs``) and cluster-wide dynamic broker configs
(``/broker-configs…``).

A broker's configs are the topic defaults it applies, under Kafka's broker config
names, and its id (``broker.id``), as the Kafka listener's DescribeConfigs lists them
(``config_entries.broker_config_entries``): ``DYNAMIC_DEFAULT_BROKER_CONFIG`` where
the cluster-wide dynamic config sets one, ``STATIC_BROKER_CONFIG`` where the broker's
settings differ from highwater's built-in default, ``DEFAULT_CONFIG`` elsewhere. Each
broker knows only its own settings, so a request about another live broker is passed
to it (``passing_on``).

The cluster-wide configs (``/broker-configs``) are every topic default
(``cluster_defaults.DYNAMIC_BROKER_CONFIGS``): an alter is a cluster record the
controller writes and every broker applies, to its topic creation on both doors and
to the replicas of every topic that does not override the config. The answer comes
once the broker asked has applied it. A batch is all or nothing; ``validate_only``
changes nothing. They may also hold the replication throttle rates.

Per-broker alters (``/brokers/{b}/configs``) set only the replication throttle rates
(``throttle_rates``), a record the controller writes for that broker; any other config
is refused with 400 INVALID_CONFIG and nothing changed (``config_entries.broker_config_alter_refusal``,
the refusal the Kafka listener's alter APIs answer too): one value for the whole cluster
keeps every replica of a partition on the same rules, whichever broker holds it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from broker.errors import NotFound
from broker.server.admin_bodies import (
    BrokerConfigData,
    BrokerConfigDataList,
    ClusterConfigData,
    ClusterConfigDataList,
    config_body,
    list_of,
)
from broker.server.api_routes import CLUSTER, JSON, Body, Operation, Reply, RouteTable, path_param
from broker.server.params import node_of, path_int, read_model
from broker.server.passing_on import not_registered, pass_on
from broker.server.resources import cluster_path
from broker.server.routes_cluster import BROKER
from broker.server.routes_configs import AlterConfigBatchRequestData, UpdateConfigRequestData
from broker.topics.config_entries import (
    BROKER_CONFIGS_FIXED,
    broker_config_alter_refusal,
    broker_config_entries,
    cluster_config_entries,
    read_only_for_one_broker,
)

if TYPE_CHECKING:
    from broker.server.host import HttpHost

BROKERS = "/v3/clusters/{cluster_id}/brokers"
CLUSTER_CONFIGS = "/v3/clusters/{cluster_id}/broker-configs"
NAME = path_param("name", {"type": "string"}, "a broker config name, e.g. log.retention.ms")
READ_ONLY = f"{BROKER_CONFIGS_FIXED} (an alter of another config is 400 INVALID_CONFIG, nothing changed)"
routes = RouteTable()


def _local_configs(node: HttpHost) -> list[dict[str, Any]]:
    path = f"{cluster_path(node)}/brokers/{node.node_id}/configs"
    return [
        config_body(
            node,
            "KafkaBrokerConfig",
            path,
            entry,
            read_only=read_only_for_one_broker(entry.name),
            broker_id=node.node_id,
        )
        for entry in sorted(
            broker_config_entries(
                node.settings, node.topic_configs.dynamic_defaults, node.catalog.broker_configs(node.node_id)
            ),
            key=lambda entry: entry.name,
        )
    ]


async def _broker_configs(request: web.Request, broker_id: int) -> list[dict[str, Any]]:
    node = node_of(request)
    if broker_id == node.node_id:
        return _local_configs(node)
    answer = await pass_on(request, node, broker_id, f"{cluster_path(node)}/brokers/{broker_id}/configs")
    data: list[dict[str, Any]] = answer["data"]
    return data


@routes.get(
    BROKERS + "/-/configs",
    Operation("Every live broker's configs", (Reply(200, "configs", {JSON: BrokerConfigDataList}),), (CLUSTER,)),
)
async def list_all_broker_configs(request: web.Request) -> web.Response:
    node = node_of(request)
    items = [item for broker_id in node.catalog.broker_ids() for item in await _broker_configs(request, broker_id)]
    return web.json_response(list_of("KafkaBrokerConfigList", node, f"{cluster_path(node)}/brokers/-/configs", items))


@routes.get(
    BROKERS + "/{broker_id}/configs",
    Operation(
        "A broker's configs (all read-only)",
        (Reply(200, "configs", {JSON: BrokerConfigDataList}),),
        (CLUSTER, BROKER),
        description=READ_ONLY,
    ),
)
async def list_broker_configs(request: web.Request) -> web.Response:
    node = node_of(request)
    broker_id = path_int(request, "broker_id")
    items = await _broker_configs(request, broker_id)
    path = f"{cluster_path(node)}/brokers/{broker_id}/configs"
    return web.json_response(list_of("KafkaBrokerConfigList", node, path, items))


@routes.get(
    BROKERS + "/{broker_id}/configs/{name}",
    Operation("One broker config", (Reply(200, "config", {JSON: BrokerConfigData}),), (CLUSTER, BROKER, NAME)),
)
async def get_broker_config(request: web.Request) -> web.Response:
    broker_id, name = path_int(request, "broker_id"), request.match_info["name"]
    for item in await _broker_configs(request, broker_id):
        if item["name"] == name:
            return web.json_response(item)
    raise NotFound(f"config {name!r} cannot be found for broker {broker_id}", broker_id=broker_id, name=name)


async def _alter_broker(
    request: web.Request, changes: dict[str, str | None], validate_only: bool = False
) -> web.Response:
    """404 for an unknown broker, 400 naming the first unknown or read-only config; else the alter, then 204.

    Every broker lists the same config names (their values are its own), so the names are
    checked against this broker's list, without asking broker ``broker_id``. An alter of
    nothing alters nothing, and is answered as done.
    """
    node = node_of(request)
    broker_id = path_int(request, "broker_id")
    if node.catalog.broker_url(broker_id) is None:
        raise not_registered(node, broker_id)
    known = {item["name"] for item in _local_configs(node)}
    refusal = broker_config_alter_refusal(list(changes), known)
    if refusal is not None:
        raise refusal
    if changes:
        await node.controller_gateway.alter_broker_configs(broker_id, changes, validate_only=validate_only)
    return web.Response(status=204)


@routes.route(
    "PUT",
    BROKERS + "/{broker_id}/configs/{name}",
    Operation(
        "Set a replication throttle rate of one broker (a null value removes it)",
        (Reply(204, "updated"),),
        (CLUSTER, BROKER, NAME),
        Body({JSON: UpdateConfigRequestData}),
        READ_ONLY,
    ),
)
async def update_broker_config(request: web.Request) -> web.Response:
    path_int(request, "broker_id")
    body = await read_model(request, UpdateConfigRequestData)
    return await _alter_broker(request, {request.match_info["name"]: body.value})


@routes.delete(
    BROKERS + "/{broker_id}/configs/{name}",
    Operation(
        "Remove a replication throttle rate of one broker",
        (Reply(204, "removed"),),
        (CLUSTER, BROKER, NAME),
        description=READ_ONLY,
    ),
)
async def reset_broker_config(request: web.Request) -> web.Response:
    return await _alter_broker(request, {request.match_info["name"]: None})


@routes.post(
    BROKERS + "/{broker_id}/configs:alter",
    Operation(
        "Set or remove replication throttle rates of one broker, all or nothing; validate_only changes nothing",
        (Reply(204, "altered (or, with validate_only, valid)"),),
        (CLUSTER, BROKER),
        Body({JSON: AlterConfigBatchRequestData}),
        READ_ONLY,
    ),
)
async def alter_broker_configs(request: web.Request) -> web.Response:
    path_int(request, "broker_id")
    body = await read_model(request, AlterConfigBatchRequestData)
    return await _alter_broker(request, body.changes(), body.validate_only)


def _cluster_configs(node: HttpHost) -> list[dict[str, Any]]:
    path = f"{cluster_path(node)}/broker-configs"
    return [
        config_body(node, "KafkaClusterConfig", path, entry, read_only=False, config_type="BROKER")
        for entry in cluster_config_entries(node.topic_configs.broker_defaults)
    ]


@routes.get(
    CLUSTER_CONFIGS,
    Operation(
        "The cluster-wide dynamic broker configs that are set",
        (Reply(200, "configs", {JSON: ClusterConfigDataList}),),
        (CLUSTER,),
    ),
)
async def list_cluster_configs(request: web.Request) -> web.Response:
    node = node_of(request)
    path = f"{cluster_path(node)}/broker-configs"
    return web.json_response(list_of("KafkaClusterConfigList", node, path, _cluster_configs(node)))


@routes.get(
    CLUSTER_CONFIGS + "/{name}",
    Operation(
        "One cluster-wide dynamic broker config (404 unless it is set)",
        (Reply(200, "config", {JSON: ClusterConfigData}),),
        (CLUSTER, NAME),
    ),
)
async def get_cluster_config(request: web.Request) -> web.Response:
    node = node_of(request)
    name = request.match_info["name"]
    for item in _cluster_configs(node):
        if item["name"] == name:
            return web.json_response(item)
    raise NotFound(f"cluster-wide dynamic broker config {name!r} is not set", name=name)


@routes.route(
    "PUT",
    CLUSTER_CONFIGS + "/{name}",
    Operation(
        "Set a cluster-wide dynamic broker config (a null value resets it)",
        (Reply(204, "updated"),),
        (CLUSTER, NAME),
        Body({JSON: UpdateConfigRequestData}),
    ),
)
async def update_cluster_config(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, UpdateConfigRequestData)
    await node.controller_gateway.alter_cluster_configs({request.match_info["name"]: body.value})
    return web.Response(status=204)


@routes.delete(
    CLUSTER_CONFIGS + "/{name}",
    Operation("Reset a cluster-wide dynamic broker config", (Reply(204, "reset"),), (CLUSTER, NAME)),
)
async def reset_cluster_config(request: web.Request) -> web.Response:
    node = node_of(request)
    await node.controller_gateway.alter_cluster_configs({request.match_info["name"]: None})
    return web.Response(status=204)


@routes.post(
    CLUSTER_CONFIGS + ":alter",
    Operation(
        "Set or reset several cluster-wide dynamic broker configs, all or nothing; validate_only changes nothing",
        (Reply(204, "altered (or, with validate_only, valid)"),),
        (CLUSTER,),
        Body({JSON: AlterConfigBatchRequestData}),
    ),
)
async def alter_cluster_configs(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, AlterConfigBatchRequestData)
    await node.controller_gateway.alter_cluster_configs(body.changes(), validate_only=body.validate_only)
    return web.Response(status=204)
