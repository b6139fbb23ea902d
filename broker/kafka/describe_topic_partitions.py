"""DescribeTopicPartitions (75, KIP-966): topics and their partitions a page at a time, as Kafka 3.7+ admin clients ask.

The partitions are described as Metadata describes them (``metadata.partition_fields``),
from this broker's view. Topics come in name order, each one's partitions in order,
from the request's ``cursor`` on, at most ``response_partition_limit`` partitions in all;
when the limit cuts the answer short, ``next_cursor`` names the first partition left
out. An empty topic list asks for every topic.

DESCRIBE on each topic, as Metadata: a topic named without it is
``TOPIC_AUTHORIZATION_FAILED`` (an unknown one ``UNKNOWN_TOPIC_OR_PARTITION``), and a
listing of every topic leaves out those the principal may not see. highwater keeps no
eligible leader replicas outside the ISR (KIP-966's ELR): those lists are empty. A
topic's id is given only with its partitions (the zero UUID beside an error).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.errors import UnknownTopic
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.metadata import partition_fields
from broker.kafka.shapes import NO_THROTTLE, ZERO_UUID, build, shape
from broker.security.acl import AclOperation, Resource

API_KEY = 75


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    node = context.node
    body = request.body
    live = {broker.broker_id for broker in node.catalog.brokers()}
    if body.topics:
        names = sorted({topic.name for topic in body.topics})
    else:
        names = [
            name for name in node.catalog.topic_names() if authz.may(node, AclOperation.DESCRIBE, Resource.topic(name))
        ]
    cursor = body.cursor
    if cursor is not None:
        names = [name for name in names if name >= cursor.topic_name]
    budget = max(int(body.response_partition_limit), 1)
    topics, next_cursor = [], None
    cursor_class = shape(API_KEY, version, "Cursor")
    for name in names:
        first = int(cursor.partition_index) if cursor is not None and name == cursor.topic_name else 0
        if budget <= 0:
            next_cursor = build(cursor_class, topic_name=name, partition_index=i32(first))
            break
        described, left_at = _topic(context, version, name, first, budget, live)
        topics.append(described)
        budget -= len(described.partitions)
        if left_at is not None:
            next_cursor = build(cursor_class, topic_name=name, partition_index=i32(left_at))
            break
    return build(
        shape(API_KEY, version, "DescribeTopicPartitionsResponse"),
        throttle_time=NO_THROTTLE,
        topics=tuple(topics),
        next_cursor=next_cursor,
    )


def _topic(
    context: RequestContext, version: int, name: str, first: int, budget: int, live: set[int]
) -> tuple[Any, int | None]:
    """The topic's partitions from ``first``, at most ``budget`` of them; and the first left out, if any."""
    node = context.node
    topic_class = shape(API_KEY, version, "DescribeTopicPartitionsResponseTopic")
    resource = Resource.topic(name)
    operations = authz.authorized_operations(node, resource, True)
    common: dict[str, Any] = {"name": name, "topic_id": ZERO_UUID, "topic_authorized_operations": i32(operations)}
    try:
        record = node.catalog.topic(name)
    except UnknownTopic:
        return build(
            topic_class, error_code=ErrorCode.unknown_topic_or_partition, is_internal=False, partitions=(), **common
        ), None
    if not authz.authorized(node, AclOperation.DESCRIBE, resource):
        return build(
            topic_class, error_code=ErrorCode.topic_authorization_failed, is_internal=False, partitions=(), **common
        ), None
    partition_class = shape(API_KEY, version, "DescribeTopicPartitionsResponsePartition")
    last = min(record.partitions_count, first + budget)
    partitions = tuple(
        build(
            partition_class,
            eligible_leader_replicas=(),
            last_known_elr=(),
            **partition_fields(context, name, index, live),
        )
        for index in range(first, last)
    )
    common["topic_id"] = record.topic_id
    described = build(
        topic_class, error_code=ErrorCode.none, is_internal=record.internal, partitions=partitions, **common
    )
    return described, (last if last < record.partitions_count else None)
