"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69): KIP-848's consumer protocol for Kafka clients.

A librdkafka consumer with ``group.protocol=consumer`` (or Kafka's Java consumer) joins,
stays and leaves by heartbeats answered from the same coordinator and the same pure
state machine as the HTTP groups (``broker.groups.membership``), so such a member, an
HTTP member and a REST v2 instance share one group, one assignment and one set of
committed offsets. Only the framing is Kafka's:

- topics are named by id in owned and assigned partitions (``TopicRecord.topic_id``);
  an owned partition of a topic no longer there is dropped;
- member epoch 0 joins, -1 leaves (as does -2, a static member's temporary leave: static
  membership is refused anyway, ``INVALID_REQUEST``, as on the classic door);
- v0 lets the coordinator name a member that sends no id; from v1 the client must;
- a field left null (or -1) is unchanged since the last heartbeat; an empty topic regex
  is no regex (librdkafka sends one beside its topic names, and Kafka ignores it);
- the session timeout and the heartbeat interval are the broker's
  (``group_consumer_session_timeout_ms``, ``group_consumer_heartbeat_interval_ms``);
- the assignment is sent, as Kafka sends it, in answer to a full request (a join, or one
  carrying subscription, rebalance timeout and owned partitions) and whenever it changed;
- a group whose members speak the classic protocol is ``GROUP_ID_NOT_FOUND`` here, as
  Kafka answers for a group of the other type.

Authorization, as Kafka's ``KafkaApis``: a heartbeat needs READ on the group, then
DESCRIBE on each subscribed topic name (else ``TOPIC_AUTHORIZATION_FAILED``, nothing
changed); a describe needs DESCRIBE on each group.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from broker.cluster.records import kafka_uuid_text
from broker.groups.assignors import TopicPartition, grouped_by_topic
from broker.groups.coordinator import ClassicGroupInUse
from broker.groups.membership import JOIN_EPOCH, LEAVE_EPOCH, HeartbeatRequest, Member, Subscription
from broker.groups.shard import OffsetsShard
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.groups import coordinating_shard, group_error_code, refuse_static_member, require_group
from broker.kafka.shapes import NO_THROTTLE, ZERO_UUID, build, duration, millis, shape
from broker.security.acl import AclOperation, Resource

CONSUMER_GROUP_HEARTBEAT = 68
CONSUMER_GROUP_DESCRIBE = 69
STATIC_LEAVE_EPOCH = -2
UNCHANGED = -1
DEFAULT_REBALANCE_TIMEOUT_MS = 300_000
"""Kafka's ``max.poll.interval.ms``, what a consumer sends as its rebalance timeout unless told otherwise."""
CLIENT_MEMBER_IDS_SINCE = 1
CONSUMER_MEMBER_TYPE = 1


class HeartbeatRefused(Exception):
    """A heartbeat answered with ``code`` and ``message`` before the group state was touched."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


async def heartbeat(context: RequestContext, request: DecodedRequest) -> Any:
    body = request.body
    version = request.prefix.api_version
    member_id = body.member_id
    try:
        require_group(context, AclOperation.READ, body.group_id)
        _require_topics(context, body.subscribed_topic_names or ())
        refuse_static_member(body.instance_id, body.group_id)
        if not member_id:
            if version >= CLIENT_MEMBER_IDS_SINCE or body.member_epoch != JOIN_EPOCH:
                raise HeartbeatRefused(ErrorCode.invalid_request, "the member id must not be empty")
            member_id = _new_member_id()
        shard = await coordinating_shard(context, body.group_id)
        if body.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            context.node.groups.leave(shard, body.group_id, member_id)
            return _answer(version, ErrorCode.none, None, member_id, body.member_epoch, 0, None)
        return _heartbeat(context, version, shard, body, member_id, request.client_id or "")
    except HeartbeatRefused as refusal:
        return _answer(version, refusal.code, str(refusal), member_id, UNCHANGED, 0, None)
    except ClassicGroupInUse as error:
        return _answer(version, ErrorCode.group_id_not_found, error.message, member_id, UNCHANGED, 0, None)
    except Exception as error:  # noqa: BLE001 - the error is the answer
        return _answer(version, group_error_code(error), getattr(error, "message", None), member_id, UNCHANGED, 0, None)


def _heartbeat(
    context: RequestContext, version: int, shard: OffsetsShard, body: Any, member_id: str, client_id: str
) -> Any:
    node = context.node
    state = shard.groups.get(body.group_id)
    member = state.membership.members.get(member_id) if state is not None else None
    before = frozenset(member.assigned) if member is not None else None
    owned = None
    if body.topic_partitions is not None:
        names = node.catalog.topic_names_by_id() if body.topic_partitions else {}
        owned = frozenset(
            (names[topic.topic_id], int(partition))
            for topic in body.topic_partitions
            if topic.topic_id in names
            for partition in topic.partitions
        )
    answer = node.groups.heartbeat(
        shard,
        body.group_id,
        HeartbeatRequest(
            member_id,
            body.member_epoch,
            _subscription(body),
            owned,
            client_id,
            node.settings.group_consumer_session_timeout_ms,
            _rebalance_timeout_ms(millis(body.rebalance_timeout), member),
        ),
        body.server_assignor or "uniform",
    )
    full = body.member_epoch == JOIN_EPOCH or (
        millis(body.rebalance_timeout) != UNCHANGED
        and body.subscribed_topic_names is not None
        and body.topic_partitions is not None
    )
    assignment = None
    if full or answer.assignment != before:
        partitions_class = shape(CONSUMER_GROUP_HEARTBEAT, version, "TopicPartitions")
        assignment = build(
            shape(CONSUMER_GROUP_HEARTBEAT, version, "Assignment"),
            topic_partitions=tuple(
                build(partitions_class, topic_id=topic.topic_id, partitions=tuple(i32(p) for p in numbers))
                for name, numbers in grouped_by_topic(answer.assignment).items()
                if (topic := node.catalog.known_topic(name)) is not None
            ),
        )
    interval = node.settings.group_consumer_heartbeat_interval_ms
    return _answer(version, ErrorCode.none, None, answer.member_id, answer.member_epoch, interval, assignment)


def _subscription(body: Any) -> Subscription | None:
    regex = getattr(body, "subscribed_topic_regex", None)  # v1 and later; librdkafka sends "" for none
    if regex:
        try:
            re.compile(regex)
        except re.error as error:
            raise HeartbeatRefused(
                ErrorCode.invalid_regular_expression, f"subscribed_topic_regex is not a valid regex: {error}"
            ) from None
        return Subscription(regex=regex)
    if body.subscribed_topic_names is not None:
        return Subscription(topics=frozenset(body.subscribed_topic_names))
    if body.member_epoch == JOIN_EPOCH:
        raise HeartbeatRefused(
            ErrorCode.invalid_request, "a joining member must send subscribed_topic_names or subscribed_topic_regex"
        )
    return None


def _rebalance_timeout_ms(sent_ms: int, member: Member | None) -> int:
    if sent_ms != UNCHANGED:
        return sent_ms
    return member.rebalance_timeout_ms if member is not None else DEFAULT_REBALANCE_TIMEOUT_MS


def _require_topics(context: RequestContext, names: Iterable[str]) -> None:
    for name in names:
        topic = Resource.topic(name)
        if not authz.authorized(context.node, AclOperation.DESCRIBE, topic):
            raise HeartbeatRefused(
                ErrorCode.topic_authorization_failed, authz.refusal_message(AclOperation.DESCRIBE, topic)
            )


def _new_member_id() -> str:
    """A member id as Kafka's coordinator names one: a random UUID as Kafka prints it."""
    return kafka_uuid_text(uuid.uuid4())


def _answer(
    version: int,
    code: ErrorCode,
    message: str | None,
    member_id: str | None,
    member_epoch: int,
    interval_ms: int,
    assignment: Any,
) -> Any:
    return build(
        shape(CONSUMER_GROUP_HEARTBEAT, version, "ConsumerGroupHeartbeatResponse"),
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        member_id=member_id or None,
        member_epoch=i32(member_epoch),
        heartbeat_interval=duration(interval_ms),
        assignment=assignment,
    )


async def describe(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    asked = bool(request.body.include_authorized_operations)
    groups = [await _described(context, version, group_id, asked) for group_id in request.body.group_ids]
    return build(
        shape(CONSUMER_GROUP_DESCRIBE, version, "ConsumerGroupDescribeResponse"),
        throttle_time=NO_THROTTLE,
        groups=tuple(groups),
    )


async def _described(context: RequestContext, version: int, group_id: str, operations_asked: bool) -> Any:
    group_class = shape(CONSUMER_GROUP_DESCRIBE, version, "DescribedGroup")
    empty = {"group_state": "", "group_epoch": i32(-1), "assignment_epoch": i32(-1), "assignor_name": "", "members": ()}
    try:
        require_group(context, AclOperation.DESCRIBE, group_id)
        shard = await coordinating_shard(context, group_id)
    except Exception as error:  # noqa: BLE001 - the error is the group's answer
        message = getattr(error, "message", None)
        return build(group_class, error_code=group_error_code(error), error_message=message, group_id=group_id, **empty)
    state = shard.groups.get(group_id)
    if state is None or state.classic_members:
        message = f"group {group_id!r} is not a consumer group" if state else f"group {group_id!r} does not exist"
        return build(
            group_class, error_code=ErrorCode.group_id_not_found, error_message=message, group_id=group_id, **empty
        )
    group = state.membership
    operations = authz.authorized_operations(context.node, Resource.group(group_id), operations_asked)
    return build(
        group_class,
        error_code=ErrorCode.none,
        error_message=None,
        group_id=group_id,
        group_state=group.state,
        group_epoch=i32(group.group_epoch),
        assignment_epoch=i32(group.assignment_epoch),
        assignor_name=group.assignor,
        members=tuple(
            _member(context, version, m, group.target.get(m.member_id, set())) for m in group.members.values()
        ),
        authorized_operations=i32(operations),
    )


def _member(context: RequestContext, version: int, member: Member, target: Iterable[TopicPartition]) -> Any:
    return build(
        shape(CONSUMER_GROUP_DESCRIBE, version, "Member"),
        member_id=member.member_id,
        instance_id=None,
        rack_id=None,
        member_epoch=i32(member.member_epoch),
        client_id=member.client_id,
        client_host="",
        subscribed_topic_names=tuple(sorted(member.subscription.topics or ())),
        subscribed_topic_regex=member.subscription.regex,
        assignment=_described_assignment(context, version, member.assigned | member.revoking),
        target_assignment=_described_assignment(context, version, target),
        member_type=i8(CONSUMER_MEMBER_TYPE),
    )


def _described_assignment(context: RequestContext, version: int, partitions: Iterable[TopicPartition]) -> Any:
    partitions_class = shape(CONSUMER_GROUP_DESCRIBE, version, "TopicPartitions")
    return build(
        shape(CONSUMER_GROUP_DESCRIBE, version, "Assignment"),
        topic_partitions=tuple(
            build(
                partitions_class,
                topic_id=topic.topic_id if (topic := context.node.catalog.known_topic(name)) else ZERO_UUID,
                topic_name=name,
                partitions=tuple(i32(p) for p in numbers),
            )
            for name, numbers in grouped_by_topic(partitions).items()
        ),
    )
