"""IncrementalAlterConfigs (44) and AlterConfigs (33): Kafka's config alters as the controller gateway's one alter.

Both translate each resource into changes (config name -> new value, None = reset to
the default) and hand a topic's to ``ControllerGateway.alter_topic_configs``, the call
the HTTP config routes make: the same checks and policies (``TopicConfigs.altered``),
all or nothing per topic, every broker applying the new topic record to its replicas.
This door only translates, and its translations are pure (``incremental_changes``,
``replacement_changes``).

Kafka's rules kept here:

- IncrementalAlterConfigs: SET (0) sets the value, DELETE (1) resets the config to its
  default (the value is ignored); APPEND (2) and SUBTRACT (3) apply only to LIST-typed
  configs, which highwater has none of, so they are ``INVALID_CONFIG`` naming the config
  (Kafka's "Can't APPEND to key … because its type is not LIST"); any other operation is
  ``INVALID_REQUEST``;
- AlterConfigs (legacy) replaces the resource's whole set of overrides: a config the
  topic's record holds and the request does not give is reset to its default. The
  changes are computed from the record as this broker's metadata view holds it; an
  alter landing between that read and the write is undone, the race Kafka's own
  clients are warned of for this API;
- a config named twice in one resource is ``INVALID_REQUEST`` (Kafka's "Error due to
  duplicate config keys"); so is a null value anywhere but a DELETE (Kafka's "Null
  value not supported"), and a resource named twice in one request, for every copy
  (Kafka's "Each resource must appear at most once");
- ``validate_only`` runs every check of the alter and changes nothing;
- an unknown topic is ``UNKNOWN_TOPIC_OR_PARTITION``; a bad value or an unknown config
  is ``INVALID_CONFIG``, its message naming the config;
- the broker resource with the empty name is the cluster-wide dynamic broker configs:
  its changes go to ``ControllerGateway.alter_cluster_configs``, the call of the HTTP
  ``/broker-configs`` routes (the legacy API replaces the whole set that is in force);
- a broker resource naming this broker's id alters that broker alone: its replication
  throttle rates go to ``ControllerGateway.alter_broker_configs``, the call of the HTTP
  ``/brokers/{b}/configs`` routes, and any other config given is ``INVALID_CONFIG``
  naming it, the HTTP API's answer (``config_entries.broker_config_alter_refusal``);
  an empty list succeeds.
  Kafka answers a non-dynamic broker config with ``INVALID_REQUEST`` (KAFKA-13609 keeps
  that code for compatibility while naming INVALID_CONFIG the right one); here both
  doors answer the one decision with one code. Another id is ``INVALID_REQUEST``
  (Kafka's "Unexpected broker id");
- any other resource type (broker loggers ...) is ``INVALID_REQUEST`` naming it;
- each resource has its own error code: one bad resource never fails the others. A
  failure that is no highwater error is that resource's ``UNKNOWN_SERVER_ERROR``, logged.

Authorization comes first for each resource, as in DescribeConfigs
(``describe_configs.refused``), so a refusal reveals nothing about it: ALTER_CONFIGS on
the topic (else ``TOPIC_AUTHORIZATION_FAILED``) or, for a broker, on the cluster (else
``CLUSTER_AUTHORIZATION_FAILED``), the HTTP config routes' rule.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import structlog
from kio.schema.errors import ErrorCode

from broker.errors import InvalidConfig, InvalidRequest
from broker.kafka.admin import refusal
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import KafkaNode, RequestContext
from broker.kafka.describe_configs import BROKER, TOPIC, refused
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation
from broker.topics.config_entries import broker_config_alter_refusal, broker_config_entries
from broker.topics.configs import canonical_config_name

log = structlog.get_logger(__name__)

ALTER_CONFIGS = 33
INCREMENTAL_ALTER_CONFIGS = 44

Changes = dict[str, str | None]
"""Config name -> its new value, None to reset it to the default: what ``alter_topic_configs`` takes."""


class OpType(enum.IntEnum):
    """Kafka's ``AlterConfigOp.OpType`` numbers."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def incremental_changes(configs: Iterable[tuple[str, int, str | None]]) -> Changes:
    """IncrementalAlterConfigs' (name, operation, value) entries as changes (pure); see the module docstring."""
    given = list(configs)
    _check_given(
        [name for name, _, _ in given], [name for name, op, value in given if op != OpType.DELETE and value is None]
    )
    changes: Changes = {}
    for name, op, value in given:
        if op == OpType.SET:
            changes[name] = value
        elif op == OpType.DELETE:
            changes[name] = None
        elif op in (OpType.APPEND, OpType.SUBTRACT):
            raise InvalidConfig(
                f"cannot {OpType(op).name} config {name}: its type is not LIST (highwater has no list-typed config)",
                config=name,
            )
        else:
            raise InvalidRequest(f"unknown operation type {op} for config {name}")
    return changes


def replacement_changes(current: Mapping[str, str], configs: Iterable[tuple[str, str | None]]) -> Changes:
    """Legacy AlterConfigs' (name, value) entries as changes that make them the whole override set (pure).

    ``current`` is the record's override set: each of its configs the request does not
    give (in any spelling) is reset.
    """
    given = list(configs)
    _check_given([name for name, _ in given], [name for name, value in given if value is None])
    kept = {_spelling(name) for name, _ in given}
    changes: Changes = {name: None for name in current if _spelling(name) not in kept}
    changes.update(given)
    return changes


def _check_given(names: list[str], without_value: list[str]) -> None:
    """Kafka's checks of one resource's entries before any is applied: each name once, a value where one is due."""
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise InvalidRequest(f"duplicate config keys: {', '.join(twice)} (each config may be given once)")
    if without_value:
        raise InvalidRequest(
            f"null value not supported for: {', '.join(without_value)} (a reset is a DELETE, or in the legacy alter a config left out)"
        )


def _spelling(name: str) -> str:
    """Kafka's dotted spelling of a topic config, or ``name`` itself when unknown (the alter refuses it, naming it)."""
    try:
        return canonical_config_name(name)
    except InvalidConfig:
        return name


async def incremental_alter_configs(context: RequestContext, request: DecodedRequest) -> Any:
    return await _answer(context, request, INCREMENTAL_ALTER_CONFIGS, "IncrementalAlterConfigsResponse")


async def alter_configs(context: RequestContext, request: DecodedRequest) -> Any:
    return await _answer(context, request, ALTER_CONFIGS, "AlterConfigsResponse")


async def _answer(context: RequestContext, request: DecodedRequest, api_key: int, response_name: str) -> Any:
    version = request.prefix.api_version
    body = request.body
    copies = Counter((resource.resource_type, resource.resource_name) for resource in body.resources)
    result_class = shape(api_key, version, "AlterConfigsResourceResponse")
    results = []
    for resource in body.resources:
        kind, name = resource.resource_type, resource.resource_name
        if copies[(kind, name)] > 1:
            outcome: tuple[ErrorCode, str | None] = (
                ErrorCode.invalid_request,
                f"resource {name!r} of type {kind} is named more than once: each resource may appear once",
            )
        else:
            outcome = refused(context, AclOperation.ALTER_CONFIGS, kind, name) or await _alter(
                context.node, api_key, resource, body.validate_only
            )
        results.append(
            build(result_class, error_code=outcome[0], error_message=outcome[1], resource_type=kind, resource_name=name)
        )
    return build(shape(api_key, version, response_name), throttle_time=NO_THROTTLE, responses=tuple(results))


async def _alter(node: KafkaNode, api_key: int, resource: Any, validate_only: bool) -> tuple[ErrorCode, str | None]:
    kind, name = resource.resource_type, resource.resource_name
    try:
        if kind == TOPIC:
            changes = _changes(api_key, resource, lambda: node.catalog.topic(name).configs)
            await node.controller_gateway.alter_topic_configs(name, changes, validate_only=validate_only)
            log.info(
                "kafka.topic_configs_altered",
                api_key=api_key,
                topic=name,
                changes=changes,
                validate_only=validate_only,
            )
        elif kind == BROKER and name == "":
            changes = _changes(api_key, resource, lambda: node.topic_configs.dynamic_defaults)
            await node.controller_gateway.alter_cluster_configs(changes, validate_only=validate_only)
            log.info("kafka.cluster_configs_altered", api_key=api_key, changes=changes, validate_only=validate_only)
        elif kind == BROKER:
            own = node.catalog.broker_configs(node.settings.node_id)
            changes = _changes(api_key, resource, lambda: own)
            _check_broker_alter(node, name, changes)
            if changes:
                await node.controller_gateway.alter_broker_configs(
                    node.settings.node_id, changes, validate_only=validate_only
                )
                log.info("kafka.broker_configs_altered", api_key=api_key, changes=changes, validate_only=validate_only)
        else:
            raise InvalidRequest(f"resource type {kind} has no alterable configs: only topics (2) and brokers (4) do")
    except Exception as error:  # noqa: BLE001 - every failure is this resource's error code; refusal logs the unexpected
        return refusal(error, "alter_configs", name)
    return ErrorCode.none, None


def _changes(api_key: int, resource: Any, current: Callable[[], Mapping[str, str]]) -> Changes:
    """The resource's changes; ``current()`` (the override set) is read only for the legacy API's replacement."""
    if api_key == INCREMENTAL_ALTER_CONFIGS:
        return incremental_changes((c.name, c.config_operation, c.value) for c in resource.configs)
    return replacement_changes(current(), ((c.name, c.value) for c in resource.configs))


def _check_broker_alter(node: KafkaNode, name: str, changes: Changes) -> None:
    """Raise unless the alter is of this broker, and only of configs it may set for itself."""
    own_id = str(node.settings.node_id)
    if name != own_id:
        raise InvalidRequest(
            f"unexpected broker id {name!r}: broker {own_id} alters only its own configs "
            "(or the empty name for the cluster-wide defaults)"
        )
    own = node.catalog.broker_configs(node.settings.node_id)
    known = {entry.name for entry in broker_config_entries(node.settings, node.topic_configs.dynamic_defaults, own)}
    refused_alter = broker_config_alter_refusal(list(changes), known)
    if refused_alter is not None:
        raise refused_alter
