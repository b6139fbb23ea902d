"""Metadata: every broker's advertised Kafka address, and topics with leader, epoch, replicas, ISR.

Answered from this broker's metadata view, like Kafka's metadata cache: any broker
answers for the whole cluster. Brokers without a Kafka listener are left out of the
broker list (a Kafka client could not reach them); a partition they lead then shows
a leader the client does not know, which clients treat as "leader not available"
and retry. Topics are never created here (``allow_auto_topic_creation`` is ignored,
as with Kafka's ``auto.create.topics.enable=false``): an unknown name is
``UNKNOWN_TOPIC_OR_PARTITION``. Versions 10 and later carry each topic's id; from
version 12, as in Kafka, topics may be asked for by id: an id no topic has, or one naming
a topic the principal may not DESCRIBE, is ``UNKNOWN_TOPIC_ID`` without a name (the answer
does not reveal which topic an id is). Before 12 a topic without a name is
``INVALID_REQUEST`` (those versions' answers cannot leave a name out).
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.errors import HighwaterError
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, ZERO_UUID, build, shape
from broker.security.acl import AclOperation, Resource
from config.broker import split_host_port

API_KEY = 3
TOPIC_IDS_ASKED_SINCE = 12


def requested_topics(version: int, topics: tuple[Any, ...] | None) -> list[str] | None:
    """Names asked for; None = every topic (v0: an empty list; v1 and later: a null list)."""
    if topics is None or (version == 0 and not topics):
        return None
    return [topic.name for topic in topics if topic.name is not None]


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    node = context.node
    version = request.prefix.api_version
    names = requested_topics(version, request.body.topics)
    live = {broker.broker_id for broker in node.catalog.brokers()}
    brokers = []
    for broker in node.catalog.brokers():
        if broker.kafka_address is None:
            continue
        host, port = split_host_port(broker.kafka_address)
        brokers.append(
            build(
                shape(API_KEY, version, "MetadataResponseBroker"),
                node_id=i32(broker.broker_id),
                host=host,
                port=i32(port),
                rack=broker.rack,
            )
        )
    topics_asked = bool(getattr(request.body, "include_topic_authorized_operations", False))
    topics = [
        _topic(context, version, name, live, topics_asked)
        for name in (node.catalog.topic_names() if names is None else names)
    ]
    ids = _ids_asked(request)
    names_by_id = node.catalog.topic_names_by_id() if ids else {}
    topics += [
        _topic_by_id(context, version, names_by_id.get(topic_id), topic_id, live, topics_asked) for topic_id in ids
    ]
    cluster_asked = bool(getattr(request.body, "include_cluster_authorized_operations", False))
    return build(
        shape(API_KEY, version, "MetadataResponse"),
        throttle_time=NO_THROTTLE,
        brokers=tuple(brokers),
        cluster_id=node.cluster_id,
        controller_id=i32(node.catalog.controller_id()),
        topics=tuple(topics),
        cluster_authorized_operations=i32(authz.authorized_operations(node, Resource.cluster(), cluster_asked)),
    )


def _ids_asked(request: DecodedRequest) -> list[uuid.UUID]:
    """The ids of the topics a request names by id only."""
    return [topic.topic_id or ZERO_UUID for topic in request.body.topics or () if topic.name is None]


def _topic_by_id(
    context: RequestContext, version: int, name: str | None, topic_id: uuid.UUID, live: set[int], operations_asked: bool
) -> Any:
    """The topic with ``topic_id``, whose name is ``name`` (None: no topic has it)."""
    if version < TOPIC_IDS_ASKED_SINCE:
        return _unnamed(version, topic_id, ErrorCode.invalid_request, name="")
    if name is None or not authz.authorized(context.node, AclOperation.DESCRIBE, Resource.topic(name)):
        return _unnamed(version, topic_id, ErrorCode.unknown_topic_id, name=None)
    return _topic(context, version, name, live, operations_asked)


def _unnamed(version: int, topic_id: uuid.UUID, error_code: ErrorCode, name: str | None) -> Any:
    return build(
        shape(API_KEY, version, "MetadataResponseTopic"),
        error_code=error_code,
        name=name,
        topic_id=topic_id,
        partitions=(),
        topic_authorized_operations=i32(authz.NO_AUTHORIZED_OPERATIONS),
    )


def _topic(context: RequestContext, version: int, name: str, live: set[int], operations_asked: bool) -> Any:
    node = context.node
    topic_class = shape(API_KEY, version, "MetadataResponseTopic")
    operations = authz.authorized_operations(node, Resource.topic(name), operations_asked)
    common: dict[str, Any] = {"name": name, "topic_id": ZERO_UUID, "topic_authorized_operations": i32(operations)}
    try:
        count = node.catalog.partition_count(name)
        record = node.catalog.topic(name)
    except HighwaterError as error:
        return build(topic_class, error_code=kafka_error_code(error), partitions=(), **common)
    common["topic_id"] = record.topic_id
    partitions = tuple(_partition(context, version, name, index, live) for index in range(count))
    return build(topic_class, error_code=ErrorCode.none, is_internal=record.internal, partitions=partitions, **common)


def _partition(context: RequestContext, version: int, topic: str, index: int, live: set[int]) -> Any:
    return build(shape(API_KEY, version, "MetadataResponsePartition"), **partition_fields(context, topic, index, live))


def partition_fields(context: RequestContext, topic: str, index: int, live: set[int]) -> dict[str, Any]:
    """A partition as Metadata and DescribeTopicPartitions describe it, from this broker's view (the
    fields both responses name alike; ``offline_replicas`` are the replicas whose broker is not live)."""
    try:
        record = context.node.catalog.partition_record(topic, index)
    except HighwaterError as error:
        return {
            "error_code": kafka_error_code(error),
            "partition_index": i32(index),
            "leader_id": i32(-1),
            "replica_nodes": (),
            "isr_nodes": (),
            "offline_replicas": (),
        }
    return {
        "error_code": ErrorCode.none if record.leader >= 0 else ErrorCode.leader_not_available,
        "partition_index": i32(index),
        "leader_id": i32(record.leader),
        "leader_epoch": i32(record.leader_epoch),
        "replica_nodes": tuple(i32(r) for r in record.replicas),
        "isr_nodes": tuple(i32(r) for r in record.isr),
        "offline_replicas": tuple(i32(r) for r in record.replicas if r not in live),
    }
