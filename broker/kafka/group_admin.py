"""DeleteGroups (42) and OffsetDelete (47): the group admin of Kafka's tools, as the coordinator's own operations.

Both run on the group's coordinator (``coordinating_shard``: another broker's group is
``NOT_COORDINATOR``), through the operations the HTTP routes use:

- DeleteGroups is ``DELETE …/consumer-groups/{g}`` per group: DELETE on the group
  (``GROUP_AUTHORIZATION_FAILED``), ``GROUP_ID_NOT_FOUND`` for one that does not exist,
  ``NON_EMPTY_GROUP`` while it has members (of either protocol); otherwise every
  committed offset goes and the group with them.
- OffsetDelete removes a group's committed offsets of some partitions: DELETE on the
  group, else ``GROUP_AUTHORIZATION_FAILED`` for the whole request; READ on each topic,
  else ``TOPIC_AUTHORIZATION_FAILED`` on its partitions; an unknown topic or partition is
  ``UNKNOWN_TOPIC_OR_PARTITION``; a topic a member of the group subscribes to keeps its
  offsets, ``GROUP_SUBSCRIBED_TO_TOPIC`` (Kafka's rule: they are the members'
  positions; a classic member whose subscription cannot be read counts as subscribed to
  all). A partition without a commit answers no error: there is nothing to delete.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.errors import UnknownTopic
from broker.groups.assignors import TopicPartition
from broker.groups.shard import GroupState
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.groups import coordinating_shard, group_error_code
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation, Resource

DELETE_GROUPS = 42
OFFSET_DELETE = 47


async def delete_groups(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    result_class = shape(DELETE_GROUPS, version, "DeletableGroupResult")
    results = [
        build(result_class, group_id=group_id, error_code=await _delete_group(context, group_id))
        for group_id in request.body.groups_names
    ]
    return build(
        shape(DELETE_GROUPS, version, "DeleteGroupsResponse"), throttle_time=NO_THROTTLE, results=tuple(results)
    )


async def _delete_group(context: RequestContext, group_id: str) -> ErrorCode:
    if not authz.authorized(context.node, AclOperation.DELETE, Resource.group(group_id)):
        return ErrorCode.group_authorization_failed
    try:
        shard = await coordinating_shard(context, group_id)
        shard.required_group(group_id)
        await context.node.groups.delete_group(shard, group_id)
    except Exception as error:  # noqa: BLE001 - each group answers its own error
        return group_error_code(error)
    return ErrorCode.none


async def offset_delete(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    asked = [(topic.name, [int(p.partition_index) for p in topic.partitions]) for topic in body.topics]
    group_code, codes = await _delete_offsets(context, body.group_id, asked)
    partition_class = shape(OFFSET_DELETE, version, "OffsetDeleteResponsePartition")
    topic_class = shape(OFFSET_DELETE, version, "OffsetDeleteResponseTopic")
    topics = tuple(
        build(
            topic_class,
            name=name,
            partitions=tuple(
                build(partition_class, partition_index=i32(p), error_code=codes.get((name, p), group_code))
                for p in partitions
            ),
        )
        for name, partitions in asked
    )
    return build(
        shape(OFFSET_DELETE, version, "OffsetDeleteResponse"),
        error_code=group_code,
        throttle_time=NO_THROTTLE,
        topics=topics if group_code == ErrorCode.none else (),
    )


async def _delete_offsets(
    context: RequestContext, group_id: str, asked: list[tuple[str, list[int]]]
) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
    """(the request's error, each partition's); the partitions' are empty when the request failed."""
    if not authz.authorized(context.node, AclOperation.DELETE, Resource.group(group_id)):
        return ErrorCode.group_authorization_failed, {}
    try:
        shard = await coordinating_shard(context, group_id)
        state = shard.required_group(group_id)
        codes = {(name, p): _partition_code(context, state, name, p) for name, partitions in asked for p in partitions}
        deletable = [tp for tp, code in codes.items() if code == ErrorCode.none]
        await context.node.groups.delete_offsets(shard, group_id, deletable)
    except Exception as error:  # noqa: BLE001 - the request answers its error
        return group_error_code(error), {}
    return ErrorCode.none, codes


def _partition_code(context: RequestContext, state: GroupState, topic: str, partition: int) -> ErrorCode:
    if not authz.authorized(context.node, AclOperation.READ, Resource.topic(topic)):
        return ErrorCode.topic_authorization_failed
    try:
        count = context.node.catalog.partition_count(topic)
    except UnknownTopic:
        return ErrorCode.unknown_topic_or_partition
    if not 0 <= partition < count:
        return ErrorCode.unknown_topic_or_partition
    if state.subscribes_to(topic):
        return ErrorCode.group_subscribed_to_topic
    return ErrorCode.none
