"""Every supported version of every group API, as a client sends it: encoded by kio, routed,
answered by the real handler, decoded by kio as the client would.

The handlers only translate, so the coordinator here is a stand-in that answers from
the real pure pieces (``ClassicGroup``, ``OffsetsShard``) without I/O. This pins that no
version's answer (success or error) misses a field, and what each API passes on.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any, cast

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32, i64, i64Timedelta

from broker.errors.groups import NotCoordinator
from broker.groups.classic import ClassicGroup, JoinRequest, JoinResult
from broker.groups.membership import HeartbeatRequest, Subscription
from broker.groups.shard import CommittedOffset, GroupState, OffsetsShard
from broker.kafka.apis import SUPPORTED
from broker.kafka.codec import decode_response
from broker.kafka.context import KafkaNode
from broker.kafka.dispatch import Dispatcher, Routed, route
from broker.kafka.shapes import build
from tests.unit.kafka import requests
from tests.unit.kafka.stand_in import TOPIC, StandInNode

GROUP = "readers"
ELSEWHERE = "coordinated-elsewhere"
NO_LISTENER = "coordinated-by-broker-2"
FIND_COORDINATOR, JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST, COMMIT, FETCH = 10, 11, 12, 13, 14, 15, 16, 8, 9


class StandInGroups:
    """The coordinator's classic calls, answered by one real shard and its real ``ClassicGroup``s."""

    def __init__(self) -> None:
        self.shard = OffsetsShard(0, 1)
        self.shard.loaded = True
        self.commits: list[tuple[str, str, int, list[tuple[str, int, int, str]]]] = []

    async def route(self, group_id: str, *, forwarded: bool) -> OffsetsShard:
        assert forwarded, "a Kafka request is never forwarded to the coordinator"
        if group_id == ELSEWHERE:
            raise NotCoordinator(f"broker 1 does not coordinate {group_id!r}", coordinator_id=3)
        return self.shard

    async def coordinator_id(self, group_id: str) -> int:
        return 2 if group_id == NO_LISTENER else 1

    def _classic(self, group_id: str) -> ClassicGroup:
        state = self.shard.group(group_id)
        if state.classic is None:
            state.classic = ClassicGroup(group_id)
        return state.classic

    async def classic_join(self, shard: OffsetsShard, group_id: str, request: JoinRequest) -> JoinResult:
        group = self._classic(group_id)
        result = group.join_result(group.join(request, 0))
        assert result is not None, "a lone member's join completes at once"
        return result

    async def classic_sync(
        self, shard: OffsetsShard, group_id: str, member_id: str, generation: int, assignments: dict[str, bytes]
    ) -> bytes:
        assignment = self._classic(group_id).sync(member_id, generation, assignments, 0)
        assert assignment is not None
        return assignment

    def classic_heartbeat(self, shard: OffsetsShard, group_id: str, member_id: str, generation: int) -> None:
        self._classic(group_id).heartbeat(member_id, generation, 0)

    def classic_leave(self, shard: OffsetsShard, group_id: str, member_id: str) -> None:
        self._classic(group_id).leave(member_id, 0)

    async def kafka_commit(
        self, shard: OffsetsShard, group_id: str, member_id: str, generation: int, offsets: list
    ) -> None:
        self._classic(group_id).validate_commit(member_id, generation, 0)
        state = self.shard.group(group_id)
        for topic, partition, offset, metadata in offsets:
            state.apply_commit((topic, partition), CommittedOffset(offset, metadata, 0, len(self.commits)))
        self.commits.append((group_id, member_id, generation, offsets))

    def local_groups(self) -> list[tuple[OffsetsShard, GroupState]]:
        return [(self.shard, state) for state in self.shard.groups.values() if not state.is_empty]


class GroupsNode(StandInNode):
    """A node whose group handlers find ``StandInGroups``; security is off (``OpenSecurity``) unless replaced."""

    def __init__(self) -> None:
        super().__init__()
        self.groups = StandInGroups()


def versions(api_key: int) -> list[int]:
    span = SUPPORTED[api_key]
    return list(range(span.min_version, span.max_version + 1))


def request(api_key: int, version: int, class_name: str, /, **values: Any) -> Any:
    return build(requests.request_class(api_key, version, class_name), **values)


def exchange(node: GroupsNode, api_key: int, version: int, body: Any) -> Any:
    routed = route(requests.frame(api_key, version, body, correlation_id=77))
    assert isinstance(routed, Routed)
    # the stand-in is the part of a ``KafkaNode`` these handlers call
    payload, _ = asyncio.run(Dispatcher(cast(KafkaNode, node)).answer(routed))
    assert payload is not None
    correlation_id, response = decode_response(payload, load_response_schema(api_key, version))
    assert correlation_id == 77
    return response


def join(node: GroupsNode, version: int = 5, group: str = GROUP, instance: str | None = None) -> Any:
    protocol = request(JOIN, version, "JoinGroupRequestProtocol", name="range", metadata=b"subscription")
    body = request(
        JOIN,
        version,
        "JoinGroupRequest",
        group_id=group,
        session_timeout=requests.millis(6000),
        rebalance_timeout=requests.millis(9000),
        member_id="",
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=(protocol,),
        reason=None,
    )
    return exchange(node, JOIN, version, body)


def sync(node: GroupsNode, version: int, member_id: str, generation: int, group: str = GROUP) -> Any:
    assignment = request(SYNC, version, "SyncGroupRequestAssignment", member_id=member_id, assignment=b"assigned")
    body = request(
        SYNC,
        version,
        "SyncGroupRequest",
        group_id=group,
        generation_id=i32(generation),
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(assignment,),
    )
    return exchange(node, SYNC, version, body)


def commit(node: GroupsNode, version: int, member_id: str, generation: int, group: str = GROUP) -> Any:
    partition = request(
        COMMIT,
        version,
        "OffsetCommitRequestPartition",
        partition_index=i32(0),
        committed_offset=i64(6),
        committed_leader_epoch=i32(-1),
        committed_timestamp=i64(-1),
        committed_metadata="m",
    )
    topic = request(COMMIT, version, "OffsetCommitRequestTopic", name=TOPIC, partitions=(partition,))
    body = request(
        COMMIT,
        version,
        "OffsetCommitRequest",
        group_id=group,
        generation_id_or_member_epoch=i32(generation),
        member_id=member_id,
        group_instance_id=None,
        retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=-1)),
        topics=(topic,),
    )
    return exchange(node, COMMIT, version, body)


def fetch(node: GroupsNode, version: int, group: str = GROUP, partitions: tuple[int, ...] = (0, 1)) -> Any:
    topic = request(
        FETCH, version, "OffsetFetchRequestTopic", name=TOPIC, partition_indexes=tuple(map(i32, partitions))
    )
    body = request(FETCH, version, "OffsetFetchRequest", group_id=group, topics=(topic,), require_stable=False)
    return exchange(node, FETCH, version, body)


@pytest.mark.parametrize("version", versions(FIND_COORDINATOR))
def test_find_coordinator_answers_the_coordinators_kafka_address(version: int) -> None:
    node = GroupsNode()
    if version >= 4:
        body = request(
            FIND_COORDINATOR, version, "FindCoordinatorRequest", key_type=i8(0), coordinator_keys=(GROUP, NO_LISTENER)
        )
        answer = exchange(node, FIND_COORDINATOR, version, body)
        found = [(c.key, c.error_code, c.node_id, c.host, c.port) for c in answer.coordinators]
        assert found == [
            (GROUP, ErrorCode.none, 1, "127.0.0.1", 19092),
            (NO_LISTENER, ErrorCode.coordinator_not_available, -1, "", -1),
        ]
        return
    body = request(FIND_COORDINATOR, version, "FindCoordinatorRequest", key=GROUP, key_type=i8(0))
    answer = exchange(node, FIND_COORDINATOR, version, body)
    assert (answer.error_code, answer.node_id, answer.host, answer.port) == (ErrorCode.none, 1, "127.0.0.1", 19092)


@pytest.mark.parametrize("version", versions(JOIN))
def test_a_lone_member_joins_as_leader_and_sees_its_own_subscription(version: int) -> None:
    answer = join(GroupsNode(), version)
    assert answer.error_code == ErrorCode.none
    assert (answer.generation_id, answer.leader, answer.protocol_name) == (1, answer.member_id, "range")
    assert [(m.member_id, m.metadata) for m in answer.members] == [(answer.member_id, b"subscription")]


@pytest.mark.parametrize("version", versions(JOIN))
def test_a_join_sent_to_another_broker_is_answered_not_coordinator(version: int) -> None:
    answer = join(GroupsNode(), version, group=ELSEWHERE)
    assert (answer.error_code, answer.generation_id) == (ErrorCode.not_coordinator, -1)


@pytest.mark.parametrize("version", [v for v in versions(JOIN) if v >= 5])
def test_static_membership_is_refused(version: int) -> None:
    node = GroupsNode()
    assert join(node, version, instance="pod-1").error_code == ErrorCode.invalid_request
    assert node.groups.shard.existing_group(GROUP) is None


@pytest.mark.parametrize("version", versions(SYNC))
def test_the_leaders_sync_returns_its_assignment_and_an_old_generation_is_illegal(version: int) -> None:
    node = GroupsNode()
    joined = join(node)
    assert sync(node, version, joined.member_id, 1).error_code == ErrorCode.none
    assert sync(node, version, joined.member_id, 1).assignment == b"assigned"
    assert sync(node, version, joined.member_id, 0).error_code == ErrorCode.illegal_generation


@pytest.mark.parametrize("version", versions(HEARTBEAT))
def test_heartbeats_are_fenced_by_generation_and_member(version: int) -> None:
    node = GroupsNode()
    joined = join(node)
    sync(node, 3, joined.member_id, 1)

    def beat(member_id: str, generation: int) -> ErrorCode:
        body = request(
            HEARTBEAT,
            version,
            "HeartbeatRequest",
            group_id=GROUP,
            generation_id=i32(generation),
            member_id=member_id,
            group_instance_id=None,
        )
        return exchange(node, HEARTBEAT, version, body).error_code

    assert beat(joined.member_id, 1) == ErrorCode.none
    assert beat(joined.member_id, 2) == ErrorCode.illegal_generation
    assert beat("stranger", 1) == ErrorCode.unknown_member_id


@pytest.mark.parametrize("version", versions(LEAVE))
def test_leave_group_removes_the_member_and_answers_an_unknown_one(version: int) -> None:
    node = GroupsNode()
    joined = join(node)
    if version >= 3:
        members = tuple(
            request(LEAVE, version, "MemberIdentity", member_id=m, group_instance_id=None, reason=None)
            for m in (joined.member_id, "stranger")
        )
        answer = exchange(
            node, LEAVE, version, request(LEAVE, version, "LeaveGroupRequest", group_id=GROUP, members=members)
        )
        assert answer.error_code == ErrorCode.none
        assert [(m.member_id, m.error_code) for m in answer.members] == [
            (joined.member_id, ErrorCode.none),
            ("stranger", ErrorCode.unknown_member_id),
        ]
    else:
        body = request(LEAVE, version, "LeaveGroupRequest", group_id=GROUP, member_id=joined.member_id)
        assert exchange(node, LEAVE, version, body).error_code == ErrorCode.none
        assert exchange(node, LEAVE, version, body).error_code == ErrorCode.unknown_member_id
    classic = node.groups.shard.groups[GROUP].classic
    assert classic is not None and not classic.members


@pytest.mark.parametrize("version", versions(COMMIT))
def test_a_member_of_the_generation_commits_and_a_stale_one_is_refused_for_every_partition(version: int) -> None:
    node = GroupsNode()
    joined = join(node)
    sync(node, 3, joined.member_id, 1)
    answer = commit(node, version, joined.member_id, 1)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in answer.topics] == [
        (TOPIC, [(0, ErrorCode.none)])
    ]
    assert node.groups.commits == [(GROUP, joined.member_id, 1, [(TOPIC, 0, 6, "m")])]
    refused = commit(node, version, joined.member_id, 7)
    assert refused.topics[0].partitions[0].error_code == ErrorCode.illegal_generation
    assert len(node.groups.commits) == 1


@pytest.mark.parametrize("version", versions(FETCH))
def test_offset_fetch_answers_commits_and_minus_one_without_one(version: int) -> None:
    node = GroupsNode()
    node.groups.shard.group(GROUP).apply_commit((TOPIC, 0), CommittedOffset(6, "m", 0, 0))
    answer = fetch(node, version)
    got = [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in answer.topics[0].partitions]
    assert got == [(0, 6, "m", ErrorCode.none), (1, -1, "", ErrorCode.none)]
    elsewhere = fetch(node, version, group=ELSEWHERE, partitions=(0,))
    assert elsewhere.topics[0].partitions[0].error_code == ErrorCode.not_coordinator


@pytest.mark.parametrize("version", versions(DESCRIBE))
def test_describe_groups_shows_members_with_metadata_and_assignment_and_dead_for_unknown(version: int) -> None:
    node = GroupsNode()
    joined = join(node)
    sync(node, 3, joined.member_id, 1)
    body = request(
        DESCRIBE, version, "DescribeGroupsRequest", groups=(GROUP, "nobody"), include_authorized_operations=False
    )
    described, unknown = exchange(node, DESCRIBE, version, body).groups
    assert (described.group_state, described.protocol_type, described.protocol_data) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.member_metadata, m.member_assignment) for m in described.members] == [
        (joined.member_id, b"subscription", b"assigned")
    ]
    assert (unknown.error_code, unknown.group_state, unknown.members) == (ErrorCode.none, "Dead", ())


@pytest.mark.parametrize("version", versions(LIST))
def test_list_groups_lists_the_local_groups_with_their_state(version: int) -> None:
    node = GroupsNode()
    join(node)
    node.groups.shard.group("committed-only").apply_commit((TOPIC, 0), CommittedOffset(1, "", 0, 0))
    answer = exchange(node, LIST, version, request(LIST, version, "ListGroupsRequest", states_filter=()))
    listed = sorted((g.group_id, g.protocol_type, getattr(g, "group_state", None)) for g in answer.groups)
    states = ("Empty", "CompletingRebalance") if version >= 4 else (None, None)
    assert listed == [("committed-only", "consumer", states[0]), (GROUP, "consumer", states[1])]
    if version >= 4:
        only_empty = request(LIST, version, "ListGroupsRequest", states_filter=("Empty",))
        assert [g.group_id for g in exchange(node, LIST, version, only_empty).groups] == ["committed-only"]


def test_list_groups_v5_says_each_groups_type_and_filters_by_it() -> None:
    node = GroupsNode()
    join(node)
    node.groups.shard.group("committed-only").apply_commit((TOPIC, 0), CommittedOffset(1, "", 0, 0))
    streaming = node.groups.shard.group("streaming")
    streaming.membership.heartbeat(HeartbeatRequest("m", 0, Subscription(topics=frozenset({TOPIC}))), {TOPIC: 1}, 0)

    def listed(*types: str) -> list[tuple[str, str]]:
        body = request(LIST, 5, "ListGroupsRequest", states_filter=(), types_filter=types)
        return sorted((g.group_id, g.group_type) for g in exchange(node, LIST, 5, body).groups)

    assert listed() == [("committed-only", "classic"), (GROUP, "classic"), ("streaming", "consumer")]
    assert listed("Consumer") == [("streaming", "consumer")]


def test_session_timeouts_reach_the_group_in_milliseconds() -> None:
    node = GroupsNode()
    joined = join(node, version=1)
    member = node.groups.shard.groups[GROUP].classic.members[joined.member_id]  # type: ignore[union-attr]
    assert (member.session_timeout_ms, member.rebalance_timeout_ms) == (6000, 9000)
