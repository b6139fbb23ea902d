"""FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup: Kafka's classic group protocol.

Every request is answered from the node's group coordinator (``broker.groups``), whose
pure state machine ``broker.groups.classic`` decides; nothing here keeps group state.
A group request reaches only its coordinator, the leader of the group's
``__consumer_offsets`` partition: any other broker answers ``NOT_COORDINATOR`` and the
client finds the coordinator again, as with Kafka (also after a coordinator failover,
when members rejoin since membership is in memory).

Static membership (``group.instance.id``, KIP-345) is not supported: a request that
carries one is answered ``INVALID_REQUEST`` and logged saying so.

Authorization (Kafka's ``KafkaApis``, and the HTTP group routes of ``route_access``):
FindCoordinator for a group needs DESCRIBE on it; JoinGroup, SyncGroup, Heartbeat and
LeaveGroup need READ on it. The check comes first, before the coordinator is looked up
or any state is touched, so a refused principal changes nothing and learns nothing
(not even which broker coordinates the group): it is answered
``GROUP_AUTHORIZATION_FAILED`` and the refusal is audited (``require_group``).
"""

from __future__ import annotations

from typing import Any

import structlog
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId
from kio.static.primitive import i32

from broker.errors.groups import NotCoordinator
from broker.groups.classic import NO_GENERATION, ClassicGroupError, JoinRequest
from broker.groups.shard import OffsetsShard
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.errors import kafka_error_code
from broker.kafka.shapes import NO_THROTTLE, build, millis, shape
from broker.security.acl import AclOperation, Resource
from config.broker import split_host_port

log = structlog.get_logger(__name__)

FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1
FIRST_BATCHED_FIND_COORDINATOR = 4
FIRST_BATCHED_LEAVE_GROUP = 3


def group_error_code(error: BaseException) -> ErrorCode:
    """The Kafka code for a failed group request; an unexpected exception is logged with its traceback."""
    if isinstance(error, ClassicGroupError):
        return ErrorCode[error.name.lower()]
    code = kafka_error_code(error)
    if code == ErrorCode.unknown_server_error:
        log.error("kafka.group_request_failed", exc_info=error)
    return code


async def coordinating_shard(context: RequestContext, group_id: str) -> OffsetsShard:
    """The local shard of ``group_id``; ``NOT_COORDINATOR`` (raised) when another broker coordinates it."""
    shard = await context.node.groups.route(group_id, forwarded=True)
    if isinstance(shard, str):  # route raises rather than naming a URL when told the request was forwarded
        raise NotCoordinator(f"group {group_id!r} is coordinated by {shard}")
    return shard


def require_group(context: RequestContext, operation: AclOperation, group_id: str) -> None:
    """Raise ``GROUP_AUTHORIZATION_FAILED`` (as a ``ClassicGroupError``) unless the principal may; audited."""
    resource = Resource.group(group_id)
    if not authz.authorized(context.node, operation, resource):
        raise ClassicGroupError("GROUP_AUTHORIZATION_FAILED", authz.refusal_message(operation, resource))


def refuse_static_member(group_instance_id: str | None, group_id: str) -> None:
    if group_instance_id is not None:
        log.warning("kafka.static_membership_refused", group_id=group_id, group_instance_id=group_instance_id)
        raise ClassicGroupError(
            "INVALID_REQUEST", "static membership (group.instance.id) is not supported by highwater"
        )


# ------------------------------------------------------------ FindCoordinator


async def find_coordinator(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    key_type = getattr(body, "key_type", GROUP_KEY_TYPE)
    if version >= FIRST_BATCHED_FIND_COORDINATOR:
        entry = shape(FIND_COORDINATOR, version, "Coordinator")
        coordinators = []
        for key in body.coordinator_keys:
            code, message, node_id, host, port = await _coordinator(context, key_type, key)
            coordinators.append(
                build(entry, key=key, node_id=node_id, host=host, port=port, error_code=code, error_message=message)
            )
        return build(
            shape(FIND_COORDINATOR, version, "FindCoordinatorResponse"),
            throttle_time=NO_THROTTLE,
            coordinators=tuple(coordinators),
        )
    code, message, node_id, host, port = await _coordinator(context, key_type, body.key)
    return build(
        shape(FIND_COORDINATOR, version, "FindCoordinatorResponse"),
        throttle_time=NO_THROTTLE,
        error_code=code,
        error_message=message,
        node_id=node_id,
        host=host,
        port=port,
    )


async def _coordinator(
    context: RequestContext, key_type: int, key: str
) -> tuple[ErrorCode, str | None, BrokerId, str, i32]:
    """(error code, message, node id, host, port) of the coordinator of group (key type 0) or
    transactional id (key type 1) ``key``; either needs DESCRIBE on it, as in Kafka."""
    nowhere = (BrokerId(-1), "", i32(-1))
    if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        return (
            ErrorCode.invalid_request,
            f"unknown coordinator key type {key_type} (0: group, 1: transaction)",
            *nowhere,
        )
    kind = "group" if key_type == GROUP_KEY_TYPE else "transactional id"
    try:
        if key_type == GROUP_KEY_TYPE:
            require_group(context, AclOperation.DESCRIBE, key)
            leader = await context.node.groups.coordinator_id(key)
        else:
            resource = Resource.transactional_id(key)
            if not authz.authorized(context.node, AclOperation.DESCRIBE, resource):
                message = authz.refusal_message(AclOperation.DESCRIBE, resource)
                return ErrorCode.transactional_id_authorization_failed, message, *nowhere
            leader = await context.node.transactions.coordinator_id(key)
    except Exception as error:  # noqa: BLE001 - every failure is this key's error code
        return group_error_code(error), str(error), *nowhere
    address = next((b.kafka_address for b in context.node.catalog.brokers() if b.broker_id == leader), None)
    if address is None:
        message = f"broker {leader} coordinates {kind} {key!r} but has no Kafka listener"
        return ErrorCode.coordinator_not_available, message, *nowhere
    host, port = split_host_port(address)
    return ErrorCode.none, None, BrokerId(leader), host, i32(port)


# ------------------------------------------------------------ JoinGroup


async def join_group(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    response = shape(JOIN_GROUP, version, "JoinGroupResponse")
    try:
        require_group(context, AclOperation.READ, body.group_id)
        refuse_static_member(getattr(body, "group_instance_id", None), body.group_id)
        shard = await coordinating_shard(context, body.group_id)
        session_ms = millis(body.session_timeout)
        joined = JoinRequest(
            body.member_id,
            request.client_id or "",
            "",
            body.protocol_type,
            tuple((p.name, p.metadata) for p in body.protocols),
            session_ms,
            millis(getattr(body, "rebalance_timeout", body.session_timeout)),
        )
        result = await context.node.groups.classic_join(shard, body.group_id, joined)
    except Exception as error:  # noqa: BLE001 - the error is the answer
        return build(
            response,
            throttle_time=NO_THROTTLE,
            error_code=group_error_code(error),
            generation_id=i32(NO_GENERATION),
            protocol_type=None,
            protocol_name="",
            leader="",
            skip_assignment=False,
            member_id=body.member_id,
            members=(),
        )
    member = shape(JOIN_GROUP, version, "JoinGroupResponseMember")
    return build(
        response,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        generation_id=i32(result.generation),
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name or "",
        leader=result.leader,
        skip_assignment=False,
        member_id=result.member_id,
        members=tuple(build(member, member_id=m, group_instance_id=None, metadata=data) for m, data in result.members),
    )


# ------------------------------------------------------------ SyncGroup


async def sync_group(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    response = shape(SYNC_GROUP, version, "SyncGroupResponse")
    try:
        require_group(context, AclOperation.READ, body.group_id)
        refuse_static_member(getattr(body, "group_instance_id", None), body.group_id)
        shard = await coordinating_shard(context, body.group_id)
        assignments = {a.member_id: a.assignment for a in body.assignments}
        assignment = await context.node.groups.classic_sync(
            shard, body.group_id, body.member_id, body.generation_id, assignments
        )
    except Exception as error:  # noqa: BLE001 - the error is the answer
        return build(response, throttle_time=NO_THROTTLE, error_code=group_error_code(error), assignment=b"")
    classic = shard.groups[body.group_id].classic
    return build(
        response,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        protocol_type=classic.protocol_type if classic else None,
        protocol_name=classic.protocol_name if classic else None,
        assignment=assignment,
    )


# ------------------------------------------------------------ Heartbeat, LeaveGroup


async def heartbeat(context: RequestContext, request: DecodedRequest) -> Any:
    body = request.body
    try:
        require_group(context, AclOperation.READ, body.group_id)
        refuse_static_member(getattr(body, "group_instance_id", None), body.group_id)
        shard = await coordinating_shard(context, body.group_id)
        context.node.groups.classic_heartbeat(shard, body.group_id, body.member_id, body.generation_id)
        code = ErrorCode.none
    except Exception as error:  # noqa: BLE001 - the error is the answer
        code = group_error_code(error)
    return build(
        shape(HEARTBEAT, request.prefix.api_version, "HeartbeatResponse"), throttle_time=NO_THROTTLE, error_code=code
    )


async def leave_group(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    batched = version >= FIRST_BATCHED_LEAVE_GROUP
    leaving = [(m.member_id, m.group_instance_id) for m in body.members] if batched else [(body.member_id, None)]
    codes: list[ErrorCode] = []
    try:
        require_group(context, AclOperation.READ, body.group_id)
        shard = await coordinating_shard(context, body.group_id)
    except Exception as error:  # noqa: BLE001 - the error is the answer
        top = group_error_code(error)
    else:
        top = ErrorCode.none
        for member_id, instance_id in leaving:
            try:
                refuse_static_member(instance_id, body.group_id)
                context.node.groups.classic_leave(shard, body.group_id, member_id)
                codes.append(ErrorCode.none)
            except Exception as error:  # noqa: BLE001 - each member answers its own error
                codes.append(group_error_code(error))
        if not batched:
            top = codes[0]
    members = ()
    if batched and top == ErrorCode.none:
        member = shape(LEAVE_GROUP, version, "MemberResponse")
        members = tuple(
            build(member, member_id=m, group_instance_id=i, error_code=c)
            for (m, i), c in zip(leaving, codes, strict=True)
        )
    return build(
        shape(LEAVE_GROUP, version, "LeaveGroupResponse"), throttle_time=NO_THROTTLE, error_code=top, members=members
    )
