"""DescribeConfigs: a topic's configs and this broker's defaults, labelled as ``config_entries`` explains.

Resources, as Kafka answers them:

- a topic: every topic config, from the configs its record holds and the broker's
  defaults: exactly the entries the HTTP API lists (``TopicConfigs.describe``), so
  ``compression.type`` is among them; an unknown topic is ``UNKNOWN_TOPIC_OR_PARTITION``;
- a broker named by this broker's id: its topic defaults under Kafka's broker config
  names, and ``broker.id``; the empty name: the cluster-wide dynamic broker configs
  set (``DYNAMIC_DEFAULT_BROKER_CONFIG``), as Kafka lists them; another broker's id is
  ``INVALID_REQUEST`` (Kafka's "Unexpected broker id"), as clients send a broker's
  resource to that broker;
- any other resource type (broker loggers ...) is ``INVALID_REQUEST`` naming it.

Each resource gets its own error code; one bad resource never fails the others.
A topic's entries and the cluster-wide ones are ``read_only=False`` (both are alterable,
``alter_configs``); one broker's are ``read_only=True`` but its replication throttle
rates (the only configs one broker may set for itself), as the HTTP API's ``is_read_only`` says.

Authorization comes first, as in Kafka, so a refusal reveals nothing about the
resource (``refused``, the rule the alter APIs share): DESCRIBE_CONFIGS on the topic
(else ``TOPIC_AUTHORIZATION_FAILED``) or, for a broker, on the cluster (else
``CLUSTER_AUTHORIZATION_FAILED``, the HTTP API's rule for the cluster's configs);
ALTER_CONFIGS implies it.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from broker.errors import HighwaterError, InvalidRequest
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation, Resource
from broker.topics.config_entries import (
    ConfigEntry,
    broker_config_entries,
    cluster_config_entries,
    read_only_for_one_broker,
    select,
)

API_KEY = 32
TOPIC = 2
BROKER = 4


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    include_synonyms = getattr(body, "include_synonyms", False)
    include_documentation = getattr(body, "include_documentation", False)
    results = []
    for resource in body.resources:
        entries: list[ConfigEntry] = []
        outcome = refused(context, AclOperation.DESCRIBE_CONFIGS, resource.resource_type, resource.resource_name)
        if outcome is None:
            try:
                entries = select(
                    _entries(context, resource.resource_type, resource.resource_name), resource.configuration_keys
                )
                outcome = (ErrorCode.none, None)
            except HighwaterError as error:
                outcome = (kafka_error_code(error), error.message)
        one_broker = resource.resource_type == BROKER and resource.resource_name != ""
        configs = tuple(
            _config(
                version,
                entry,
                one_broker and read_only_for_one_broker(entry.name),
                include_synonyms,
                include_documentation,
            )
            for entry in entries
        )
        results.append(
            build(
                shape(API_KEY, version, "DescribeConfigsResult"),
                error_code=outcome[0],
                error_message=outcome[1],
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=configs,
            )
        )
    return build(shape(API_KEY, version, "DescribeConfigsResponse"), throttle_time=NO_THROTTLE, results=tuple(results))


def refused(
    context: RequestContext, operation: AclOperation, resource_type: int, name: str
) -> tuple[ErrorCode, str | None] | None:
    """None when the principal may do ``operation`` on the resource (or its type is refused later); else the answer.

    A topic is asked by name, a broker as the cluster (the HTTP API's rule for broker configs).
    """
    if resource_type == TOPIC:
        target, refusal = Resource.topic(name), ErrorCode.topic_authorization_failed
    elif resource_type == BROKER:
        target, refusal = Resource.cluster(), ErrorCode.cluster_authorization_failed
    else:
        return None
    if authz.authorized(context.node, operation, target):
        return None
    return refusal, authz.refusal_message(operation, target)


def _entries(context: RequestContext, resource_type: int, name: str) -> list[ConfigEntry]:
    node = context.node
    if resource_type == TOPIC:
        return node.topic_configs.describe(node.catalog.topic(name).configs)
    if resource_type == BROKER:
        if name == "":
            return cluster_config_entries(node.topic_configs.broker_defaults)
        if name != str(node.settings.node_id):
            raise InvalidRequest(
                f"unexpected broker id {name!r}: broker {node.settings.node_id} describes only its own configs "
                "(or the empty name for the cluster-wide defaults)"
            )
        own = node.catalog.broker_configs(node.settings.node_id)
        return broker_config_entries(node.settings, node.topic_configs.dynamic_defaults, own)
    raise InvalidRequest(f"resource type {resource_type} has no configs here: only topics (2) and brokers (4) do")


def _config(
    version: int, entry: ConfigEntry, read_only: bool, include_synonyms: bool, include_documentation: bool
) -> Any:
    synonym_class = shape(API_KEY, version, "DescribeConfigsSynonym")
    synonyms = (
        tuple(build(synonym_class, name=s.name, value=s.value, source=i8(s.source)) for s in entry.synonyms)
        if include_synonyms
        else ()
    )
    return build(
        shape(API_KEY, version, "DescribeConfigsResourceResult"),
        name=entry.name,
        value=entry.value,
        read_only=read_only,
        is_default=entry.is_default,
        config_source=i8(entry.source),
        is_sensitive=False,
        synonyms=synonyms,
        config_type=i8(entry.config_type),
        documentation=entry.documentation if include_documentation else None,
    )
