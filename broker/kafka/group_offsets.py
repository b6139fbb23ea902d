"""OffsetCommit, OffsetFetch, ListGroups, DescribeGroups over the Kafka protocol.

Commits go through the same coordinator path as the HTTP commits: fenced (here by the
classic generation), bounded by each partition's high watermark, written with
acks=all to ``__consumer_offsets`` and applied only once acknowledged. So a group a
Kafka client commits for shows its offsets and lag over HTTP and in the CLI, and an
offset committed over HTTP is what a Kafka consumer resumes from.

A request whose group check fails (not the coordinator, fenced, unknown topic, an
offset above the high watermark) answers that error for every partition it names.
OffsetFetch answers -1 (Kafka's "no committed offset") for a partition without one, and
``UNSTABLE_OFFSET_COMMIT`` (retriable) to a ``require_stable`` fetch (KIP-447, what a
``read_committed`` consumer sends) for a partition a transaction has committed an offset
for that its marker has not settled yet.
ListGroups lists the groups this broker coordinates, as Kafka's does (an admin client
asks every broker); DescribeGroups answers ``Dead`` for a group that does not exist.

Authorization (Kafka's ``KafkaApis``; the HTTP group routes agree), always the group
first, so a refused principal touches no state and sees no offset:

- OffsetCommit: READ on the group, else ``GROUP_AUTHORIZATION_FAILED`` on every
  partition; then READ on each topic, else ``TOPIC_AUTHORIZATION_FAILED`` on that
  topic's partitions, and only the allowed topics are committed. (The HTTP commit
  route refuses the whole commit with 403 instead: a JSON body has no per-partition
  answer; Kafka's does, so this door answers per partition as Kafka does.)
- OffsetFetch: DESCRIBE on the group, else ``GROUP_AUTHORIZATION_FAILED``; a topic
  asked for by name without DESCRIBE answers ``TOPIC_AUTHORIZATION_FAILED`` for its
  partitions, and a fetch of all topics leaves such topics out.
- ListGroups: every group with DESCRIBE on the cluster, else only the groups the
  principal may DESCRIBE; from v5 with each group's type (``group_type``), filtered by
  ``types_filter``.
- DescribeGroups: DESCRIBE on each group, else that group's ``GROUP_AUTHORIZATION_FAILED``.

A refusal that is an answer is audited (``authz.authorized``); leaving something out of
a listing is not (``authz.may``), as Kafka and the HTTP listings do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i64

from broker.groups.classic import CONSUMER_PROTOCOL_TYPE, EMPTY, ClassicGroupError
from broker.groups.shard import GroupState
from broker.kafka import authz
from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext
from broker.kafka.groups import coordinating_shard, group_error_code, refuse_static_member, require_group
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.acl import AclOperation, Resource

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
NO_OFFSET = -1
NO_LEADER_EPOCH = -1
DEAD = "Dead"
CLASSIC_TYPE = "classic"
CONSUMER_TYPE = "consumer"


async def offset_commit(context: RequestContext, request: DecodedRequest) -> Any:
    body = request.body
    try:
        require_group(context, AclOperation.READ, body.group_id)
    except ClassicGroupError as refusal:
        refused_group = group_error_code(refusal)
        return _commit_answer(request.prefix.api_version, body.topics, lambda _: refused_group)
    refused = _refused_topics(context, AclOperation.READ, (topic.name for topic in body.topics))
    offsets = [
        (topic.name, p.partition_index, p.committed_offset, p.committed_metadata or "")
        for topic in body.topics
        if topic.name not in refused
        for p in topic.partitions
    ]
    code = ErrorCode.none
    if offsets:
        try:
            refuse_static_member(getattr(body, "group_instance_id", None), body.group_id)
            shard = await coordinating_shard(context, body.group_id)
            await context.node.groups.kafka_commit(
                shard, body.group_id, body.member_id, body.generation_id_or_member_epoch, offsets
            )
        except Exception as error:  # noqa: BLE001 - the error is the answer
            code = group_error_code(error)
    return _commit_answer(
        request.prefix.api_version, body.topics, lambda name: authz.REFUSED if name in refused else code
    )


def _commit_answer(version: int, asked: Iterable[Any], code_of: Callable[[str], ErrorCode]) -> Any:
    """The OffsetCommit response: every partition asked for, with its topic's code."""
    partition_class = shape(OFFSET_COMMIT, version, "OffsetCommitResponsePartition")
    topic_class = shape(OFFSET_COMMIT, version, "OffsetCommitResponseTopic")
    topics = tuple(
        build(
            topic_class,
            name=topic.name,
            partitions=tuple(
                build(partition_class, partition_index=p.partition_index, error_code=code_of(topic.name))
                for p in topic.partitions
            ),
        )
        for topic in asked
    )
    return build(shape(OFFSET_COMMIT, version, "OffsetCommitResponse"), throttle_time=NO_THROTTLE, topics=topics)


def _refused_topics(context: RequestContext, operation: AclOperation, names: Iterable[str]) -> frozenset[str]:
    """The topics among ``names`` the principal may not ``operation``: one audited check per distinct name."""
    return frozenset(
        name for name in dict.fromkeys(names) if not authz.authorized(context.node, operation, Resource.topic(name))
    )


async def offset_fetch(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    body = request.body
    try:
        require_group(context, AclOperation.DESCRIBE, body.group_id)
        shard = await coordinating_shard(context, body.group_id)
        state = shard.groups.get(body.group_id)
        code = ErrorCode.none
    except Exception as error:  # noqa: BLE001 - the error is the answer
        state, code = None, group_error_code(error)
    committed = state.offsets if state is not None else {}
    unstable: set[tuple[str, int]] = set()
    if state is not None and getattr(body, "require_stable", False):
        unstable = {tp for offsets in state.pending.values() for tp in offsets}
    refused: frozenset[str] = frozenset()
    if body.topics is None:
        asked: dict[str, list[int]] = {}
        for topic, partition in sorted(committed):
            asked.setdefault(topic, []).append(partition)
        asked = {
            name: partitions
            for name, partitions in asked.items()
            if authz.may(context.node, AclOperation.DESCRIBE, Resource.topic(name))
        }
    else:
        asked = {topic.name: list(topic.partition_indexes) for topic in body.topics}
        if code == ErrorCode.none:
            refused = _refused_topics(context, AclOperation.DESCRIBE, asked)
    partition_class = shape(OFFSET_FETCH, version, "OffsetFetchResponsePartition")
    topics = []
    for name, partitions in asked.items():
        entries = []
        for index in partitions:
            pending = (name, index) in unstable
            found = None if name in refused or pending else committed.get((name, index))
            error_code = authz.REFUSED if name in refused else ErrorCode.unstable_offset_commit if pending else code
            entries.append(
                build(
                    partition_class,
                    partition_index=i32(index),
                    committed_offset=i64(found.offset if found else NO_OFFSET),
                    committed_leader_epoch=i32(NO_LEADER_EPOCH),
                    metadata=found.metadata if found else "",
                    error_code=error_code,
                )
            )
        topics.append(
            build(shape(OFFSET_FETCH, version, "OffsetFetchResponseTopic"), name=name, partitions=tuple(entries))
        )
    return build(
        shape(OFFSET_FETCH, version, "OffsetFetchResponse"),
        throttle_time=NO_THROTTLE,
        topics=tuple(topics),
        error_code=code,
    )


def group_state_name(state: GroupState) -> str:
    """The state of whichever protocol the group's members use (both share ``Empty`` and ``Stable``)."""
    if state.classic_members and state.classic is not None:
        return state.classic.state
    return state.membership.state if state.membership.members else EMPTY


def group_type(state: GroupState) -> str:
    """Kafka's group type (KIP-848): ``consumer`` once consumer-protocol (HTTP, REST v2 or
    ``group.protocol=consumer``) members have used it and no classic member holds it now,
    else ``classic`` (also a group that only has committed offsets, as in Kafka)."""
    if state.classic_members:
        return CLASSIC_TYPE
    return CONSUMER_TYPE if state.membership.members or state.membership.group_epoch > 0 else CLASSIC_TYPE


async def list_groups(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    wanted = {s.lower() for s in getattr(request.body, "states_filter", ())}
    types = {t.lower() for t in getattr(request.body, "types_filter", ())}
    listed = shape(LIST_GROUPS, version, "ListedGroup")
    node = context.node
    every_group = authz.may(node, AclOperation.DESCRIBE, Resource.cluster())
    groups = []
    for _, state in node.groups.local_groups():
        name = group_state_name(state)
        if (wanted and name.lower() not in wanted) or (types and group_type(state) not in types):
            continue
        if not every_group and not authz.may(node, AclOperation.DESCRIBE, Resource.group(state.membership.group_id)):
            continue
        groups.append(
            build(
                listed,
                group_id=state.membership.group_id,
                protocol_type=CONSUMER_PROTOCOL_TYPE,
                group_state=name,
                group_type=group_type(state),
            )
        )
    return build(
        shape(LIST_GROUPS, version, "ListGroupsResponse"),
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        groups=tuple(groups),
    )


async def describe_groups(context: RequestContext, request: DecodedRequest) -> Any:
    version = request.prefix.api_version
    asked = bool(getattr(request.body, "include_authorized_operations", False))
    described = [await _describe(context, version, group_id, asked) for group_id in request.body.groups]
    return build(
        shape(DESCRIBE_GROUPS, version, "DescribeGroupsResponse"), throttle_time=NO_THROTTLE, groups=tuple(described)
    )


async def _describe(context: RequestContext, version: int, group_id: str, operations_asked: bool) -> Any:
    group_class = shape(DESCRIBE_GROUPS, version, "DescribedGroup")
    member_class = shape(DESCRIBE_GROUPS, version, "DescribedGroupMember")
    operations = authz.authorized_operations(context.node, Resource.group(group_id), operations_asked)
    common = {"group_id": group_id, "authorized_operations": i32(operations)}
    try:
        require_group(context, AclOperation.DESCRIBE, group_id)
        shard = await coordinating_shard(context, group_id)
    except Exception as error:  # noqa: BLE001 - each group answers its own error
        code = group_error_code(error)
        return build(
            group_class, error_code=code, group_state="", protocol_type="", protocol_data="", members=(), **common
        )
    state = shard.existing_group(group_id)
    if state is None:
        return build(
            group_class,
            error_code=ErrorCode.none,
            group_state=DEAD,
            protocol_type="",
            protocol_data="",
            members=(),
            **common,
        )
    classic = state.classic if state.classic_members else None
    if classic is not None:
        members = tuple(
            build(
                member_class,
                member_id=m.member_id,
                group_instance_id=None,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(classic.protocol_name),
                member_assignment=m.assignment,
            )
            for m in classic.members.values()
        )
        protocol = classic.protocol_name or ""
    else:
        members = tuple(
            build(
                member_class,
                member_id=m.member_id,
                group_instance_id=None,
                client_id=m.client_id,
                client_host="",
                member_metadata=b"",
                member_assignment=b"",
            )
            for m in state.membership.members.values()
        )
        protocol = state.membership.assignor if members else ""
    return build(
        group_class,
        error_code=ErrorCode.none,
        group_state=group_state_name(state),
        protocol_type=CONSUMER_PROTOCOL_TYPE,
        protocol_data=protocol,
        members=members,
        **common,
    )
