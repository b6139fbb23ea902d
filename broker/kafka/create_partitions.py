"""CreatePartitions (37): grow a topic's partition count, the HTTP ``PATCH …/topics/{t}``'s operation.

Each topic goes to the same node operation (``create_partitions``: the controller places
the new partitions as at a creation), one after another, and answers its own error:

- ALTER on the topic, as Kafka's; a principal that may not even DESCRIBE it is told
  ``UNKNOWN_TOPIC_OR_PARTITION``, as for a topic that does not exist;
- a count that does not grow the topic is ``INVALID_PARTITIONS``; an internal topic is
  ``INVALID_TOPIC_EXCEPTION`` (its count maps every group to its coordinator);
- a manual assignment of the new partitions (``assignments``) is
  ``INVALID_REPLICA_ASSIGNMENT``: the controller places them, as it does for the HTTP call;
- a topic named twice is ``INVALID_REQUEST`` for every copy (Kafka's "duplicate topic");
- ``validate_only`` makes every check and changes nothing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from broker.kafka import authz
from broker.kafka.admin import refusal
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation, Resource

API_KEY = 37


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    result_class = shape(API_KEY, version, "CreatePartitionsTopicResult")
    named = Counter(topic.name for topic in request.body.topics)
    results = []
    for topic in request.body.topics:
        code, message = await _grow(context, topic, named[topic.name] > 1, request.body.validate_only)
        results.append(build(result_class, name=topic.name, error_code=code, error_message=message))
    return build(shape(API_KEY, version, "CreatePartitionsResponse"), throttle_time=NO_THROTTLE, results=tuple(results))


async def _grow(
    context: RequestContext, topic: Any, duplicate: bool, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    name, count = topic.name, int(topic.count)
    resource = Resource.topic(name)
    if duplicate:
        return ErrorCode.invalid_request, f"topic '{name}' is named more than once in the request"
    if not authz.authorized(context.node, AclOperation.ALTER, resource):
        if authz.may(context.node, AclOperation.DESCRIBE, resource):
            return ErrorCode.topic_authorization_failed, authz.refusal_message(AclOperation.ALTER, resource)
        return ErrorCode.unknown_topic_or_partition, f"topic '{name}' does not exist"
    if topic.assignments is not None:
        return (
            ErrorCode.invalid_replica_assignment,
            f"the new partitions of '{name}' are placed by the controller; a manual assignment is not supported",
        )
    gateway = context.node.controller_gateway
    try:
        if validate_only:
            gateway.check_new_partitions(name, count)
        else:
            await gateway.create_partitions(name, count)
    except Exception as error:  # noqa: BLE001 - every failure is this topic's error code; refusal logs the unexpected
        return refusal(error, "create_partitions", name)
    return ErrorCode.none, None
