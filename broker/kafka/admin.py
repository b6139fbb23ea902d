"""CreateTopics, DeleteTopics and DescribeCluster: Kafka's admin requests as the node's topic operations.

Each topic of a request goes to the same node operation the HTTP API calls
(``create_topic``, ``delete_topic``), so names, counts, placement and configs are
checked by one set of rules; a refusal becomes that topic's Kafka error code and
message (``TOPIC_ALREADY_EXISTS``, ``INVALID_PARTITIONS``, ``INVALID_REPLICATION_FACTOR``,
``INVALID_REPLICA_ASSIGNMENT``, ``INVALID_CONFIG``, ``INVALID_TOPIC_EXCEPTION``), never
the request's. Topics of one request are handled one after another, as the controller
serialises them anyway.

Kafka's rules kept here:

- ``num_partitions`` / ``replication_factor`` of -1 (v4+) take the broker's
  ``topic_defaults``; a config with a null value means "the default" and is dropped,
  its name still checked (as the HTTP API does);
- ``validate_only`` runs every check of a creation (``check_new_topic``) and creates
  nothing; the answer is the one a creation would give, configs included;
- the answer's configs (v5+) are every config of the new topic as the HTTP API lists
  them (``TopicConfigs.describe``), ``compression.type`` included, none
  read-only (each may be altered later, ``alter_configs``);
- a topic named twice in one request is refused for every copy with
  ``INVALID_REQUEST`` (Kafka's "duplicate topic names");
- a manual replica assignment (``assignments``) places the replicas instead of the
  controller, by Kafka's rules (``broker.cluster.replica_assignment``): both counts must
  be -1 beside it (else ``INVALID_REQUEST``, as ZooKeeper-era Kafka answers; KRaft answers
  ``INVALID_PARTITIONS`` or ``INVALID_REPLICATION_FACTOR``), and a malformed one or one
  naming an unregistered broker is ``INVALID_REPLICA_ASSIGNMENT`` with a message saying
  what is wrong;
- CreateTopics answers the new topic's id (v7+); DeleteTopics (v6+) takes topics by id
  too, an id no topic has (or one naming a topic the principal may not DESCRIBE) being
  ``UNKNOWN_TOPIC_ID``;
- a failure that is no highwater error (the metadata store unreachable ...) is that
  topic's ``UNKNOWN_SERVER_ERROR``, logged with its traceback, as Produce answers it;
- CreateTopics answers once this broker's metadata view shows the new topic, whatever
  ``timeout_ms`` says (the node's wait, at most ten seconds); other brokers follow shortly.

Authorization is the HTTP routes' (``route_access``, ``routes_topics``), per topic and
before anything is checked or created, so a refused topic reveals nothing:

- CreateTopics needs CREATE on the cluster (asked once per request) or on the topic,
  else ``TOPIC_AUTHORIZATION_FAILED`` (validate-only too); a topic that already exists
  is ``TOPIC_ALREADY_EXISTS`` only to a principal that may DESCRIBE it;
- DeleteTopics needs DELETE on the topic; a principal that may not even DESCRIBE it is
  told ``UNKNOWN_TOPIC_OR_PARTITION``, as for a topic that does not exist;
- DescribeCluster is served to any authenticated principal, as ``GET …/brokers`` is.

DescribeCluster lists the brokers with a Kafka listener (as Metadata does) and the
controller; only the broker endpoint type is served (controllers are not separately
reachable), anything else is ``UNSUPPORTED_ENDPOINT_TYPE`` as in Kafka.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i16, i32

from broker.cluster.replica_assignment import check_exclusive, ordered_assignment
from broker.errors import HighwaterError
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, ZERO_UUID, build, shape
from broker.security.acl import AclOperation, Resource
from broker.topics.config_entries import ConfigEntry
from broker.topics.configs import canonical_config_name
from broker.topics.new_topic import NewTopic
from config.broker import split_host_port

log = structlog.get_logger(__name__)

CREATE_TOPICS = 19
DELETE_TOPICS = 20
DESCRIBE_CLUSTER = 60
BROKERS_ENDPOINT = 1
USE_DEFAULT = -1
CONFIGS_SINCE = 5
"""CreateTopics answers counts and configs from v5 (KIP-525)."""


async def create_topics(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    counts = Counter(topic.name for topic in body.topics)
    cluster_wide = authz.may(context.node, AclOperation.CREATE, Resource.cluster())
    results = []
    for topic in body.topics:
        if counts[topic.name] > 1:
            error = (ErrorCode.invalid_request, f"topic '{topic.name}' is named more than once in this request")
            results.append(_created(version, topic.name, *error))
        elif not cluster_wide and not authz.authorized(context.node, AclOperation.CREATE, Resource.topic(topic.name)):
            message = authz.refusal_message(AclOperation.CREATE, Resource.topic(topic.name))
            results.append(_created(version, topic.name, ErrorCode.topic_authorization_failed, message))
        else:
            results.append(
                _hidden_if_existing(context, version, await _create_one(context, version, topic, body.validate_only))
            )
    return build(
        shape(CREATE_TOPICS, version, "CreateTopicsResponse"), throttle_time=NO_THROTTLE, topics=tuple(results)
    )


async def _create_one(context: RequestContext, version: int, topic: Any, validate_only: bool) -> Any:
    node = context.node
    try:
        new = NewTopic.requested(
            topic.name,
            None if topic.num_partitions == USE_DEFAULT else topic.num_partitions,
            None if topic.replication_factor == USE_DEFAULT else topic.replication_factor,
            _config_strings(topic.configs),
            _assignment(topic),
            node.topic_configs.defaults,
        )
        if validate_only:
            node.controller_gateway.check_new_topic(new)
        else:
            await node.controller_gateway.create_topic(new)
        entries = node.topic_configs.describe(new.configs)
    except Exception as error:  # noqa: BLE001 - every failure is this topic's error code; refusal logs the unexpected
        return _created(version, topic.name, *refusal(error, "create", topic.name))
    described = _described_configs(version, entries) if version >= CONFIGS_SINCE else ()
    created = None if validate_only else node.catalog.known_topic(topic.name)
    return _created(
        version,
        topic.name,
        ErrorCode.none,
        None,
        num_partitions=new.partitions_count,
        replication_factor=new.replication_factor,
        configs=described,
        topic_id=ZERO_UUID if created is None else created.topic_id,
    )


def _assignment(topic: Any) -> list[list[int]] | None:
    """The topic's manual assignment as replica lists by partition, None without one; with one, both counts
    must be -1 (``INVALID_REQUEST`` otherwise, as Kafka answered before KRaft)."""
    if not topic.assignments:
        return None
    check_exclusive(
        None if topic.num_partitions == USE_DEFAULT else int(topic.num_partitions),
        None if topic.replication_factor == USE_DEFAULT else int(topic.replication_factor),
    )
    return ordered_assignment((int(a.partition_index), [int(b) for b in a.broker_ids]) for a in topic.assignments)


def _hidden_if_existing(context: RequestContext, version: int, result: Any) -> Any:
    """``TOPIC_ALREADY_EXISTS`` only to a principal that may DESCRIBE the topic, as the HTTP route answers it."""
    if result.error_code != ErrorCode.topic_already_exists:
        return result
    existing = Resource.topic(result.name)
    if authz.authorized(context.node, AclOperation.DESCRIBE, existing):
        return result
    message = authz.refusal_message(AclOperation.DESCRIBE, existing)
    return _created(version, result.name, ErrorCode.topic_authorization_failed, message)


def refusal(error: Exception, operation: str, topic: str) -> tuple[ErrorCode, str | None]:
    """A highwater error's code and message; anything else is ``UNKNOWN_SERVER_ERROR`` without its text, logged."""
    if isinstance(error, HighwaterError):
        return kafka_error_code(error), error.message
    log.exception("kafka.admin_failed", operation=operation, topic=topic)
    return ErrorCode.unknown_server_error, None


def _described_configs(version: int, entries: list[ConfigEntry]) -> tuple[Any, ...]:
    config_class = shape(CREATE_TOPICS, version, "CreatableTopicConfigs")
    return tuple(
        build(
            config_class,
            name=entry.name,
            value=entry.value,
            read_only=False,
            config_source=i8(entry.source),
            is_sensitive=False,
        )
        for entry in entries
    )


def _config_strings(configs: tuple[Any, ...]) -> dict[str, str]:
    """Configs with a value; a null value is "the default", its name still checked (``InvalidConfig``)."""
    strings = {}
    for config in configs:
        if config.value is None:
            canonical_config_name(config.name)
        else:
            strings[config.name] = config.value
    return strings


def _created(
    version: int,
    name: str,
    error_code: ErrorCode,
    message: str | None,
    *,
    num_partitions: int = -1,
    replication_factor: int = -1,
    configs: tuple[Any, ...] = (),
    topic_id: uuid.UUID = ZERO_UUID,
) -> Any:
    return build(
        shape(CREATE_TOPICS, version, "CreatableTopicResult"),
        name=name,
        topic_id=topic_id,
        error_code=error_code,
        error_message=message,
        topic_config_error_code=i16(0),
        num_partitions=i32(num_partitions),
        replication_factor=i16(replication_factor),
        configs=configs,
    )


async def delete_topics(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    asked = (
        [(name, None) for name in body.topic_names]
        if hasattr(body, "topic_names")
        else [(topic.name, topic.topic_id) for topic in body.topics]
    )
    names_by_id = context.node.catalog.topic_names_by_id() if any(name is None for name, _ in asked) else {}
    result_class = shape(DELETE_TOPICS, version, "DeletableTopicResult")
    results = []
    for asked_name, topic_id in asked:
        name = asked_name if asked_name is not None else names_by_id.get(topic_id or ZERO_UUID)
        if name is None or (
            asked_name is None and not authz.may(context.node, AclOperation.DESCRIBE, Resource.topic(name))
        ):
            message = f"no topic has the id {topic_id}"
            results.append(
                build(
                    result_class,
                    name=None,
                    topic_id=topic_id or ZERO_UUID,
                    error_code=ErrorCode.unknown_topic_id,
                    error_message=message,
                )
            )
            continue
        existing = context.node.catalog.known_topic(name)
        outcome = delete_refused(context, name)
        if outcome is None:
            try:
                await context.node.controller_gateway.delete_topic(name)
                outcome = (ErrorCode.none, None)
            except Exception as error:  # noqa: BLE001 - every failure is this topic's error code; refusal logs the unexpected
                outcome = refusal(error, "delete", name)
        shown_id = existing.topic_id if existing is not None and outcome[0] == ErrorCode.none else ZERO_UUID
        results.append(
            build(result_class, name=name, topic_id=shown_id, error_code=outcome[0], error_message=outcome[1])
        )
    return build(
        shape(DELETE_TOPICS, version, "DeleteTopicsResponse"), throttle_time=NO_THROTTLE, responses=tuple(results)
    )


def delete_refused(context: RequestContext, name: str) -> tuple[ErrorCode, str | None] | None:
    """None when the principal may DELETE the topic; else its answer, which hides the topic from one
    that may not even DESCRIBE it (the HTTP route's ``hidden_as_missing``)."""
    topic = Resource.topic(name)
    if authz.authorized(context.node, AclOperation.DELETE, topic):
        return None
    if authz.may(context.node, AclOperation.DESCRIBE, topic):
        return ErrorCode.topic_authorization_failed, authz.refusal_message(AclOperation.DELETE, topic)
    return ErrorCode.unknown_topic_or_partition, f"topic '{name}' does not exist"


async def describe_cluster(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    node = context.node
    endpoint_type = getattr(request.body, "endpoint_type", BROKERS_ENDPOINT)
    response_class = shape(DESCRIBE_CLUSTER, version, "DescribeClusterResponse")
    common = {
        "throttle_time": NO_THROTTLE,
        "endpoint_type": i8(endpoint_type),
        "cluster_id": node.cluster_id,
        "controller_id": i32(node.catalog.controller_id()),
        "cluster_authorized_operations": i32(
            authz.authorized_operations(
                node, Resource.cluster(), getattr(request.body, "include_cluster_authorized_operations", False)
            )
        ),
    }
    if endpoint_type != BROKERS_ENDPOINT:
        message = "only the broker endpoint type is served: highwater's controller runs inside a broker"
        return build(
            response_class, error_code=ErrorCode.unsupported_endpoint_type, error_message=message, brokers=(), **common
        )
    broker_class = shape(DESCRIBE_CLUSTER, version, "DescribeClusterBroker")
    brokers = []
    for broker in node.catalog.brokers():
        if broker.kafka_address is None:
            continue
        host, port = split_host_port(broker.kafka_address)
        brokers.append(
            build(
                broker_class,
                broker_id=i32(broker.broker_id),
                host=host,
                port=i32(port),
                rack=broker.rack,
                is_fenced=False,
            )
        )
    return build(response_class, error_code=ErrorCode.none, error_message=None, brokers=tuple(brokers), **common)
