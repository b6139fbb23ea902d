"""Authorization of the classic group APIs: FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch, ListGroups and DescribeGroups.

Every request is encoded by kio as a client sends it, answered by the real handlers as the
principal set in ``authn.SESSION``, and decoded by kio. The coordinator is the group stand-in
of ``test_groups_round_trips`` (real ``ClassicGroup`` and ``OffsetsShard``), counting how
often a handler reached it, with the real ``Authorizer`` deciding over these ACLs:

- ``reader``: READ on the group ``readers`` and on the topic ``orders`` (READ implies DESCRIBE);
- ``peeker``: DESCRIBE on the group ``readers`` and on the topic ``orders``;
- ``ops``: DESCRIBE on the cluster;
- ``mallory``: none.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32, i64, i64Timedelta
from structlog.testing import capture_logs

from broker.groups.shard import CommittedOffset, OffsetsShard
from broker.security.acl import AclOperation, ResourceType
from broker.security.authorizer import Authorizer
from tests.unit.kafka.stand_in import TOPIC
from tests.unit.kafka.test_groups_round_trips import (
    COMMIT,
    DESCRIBE,
    ELSEWHERE,
    FETCH,
    FIND_COORDINATOR,
    GROUP,
    HEARTBEAT,
    JOIN,
    LEAVE,
    LIST,
    SYNC,
    GroupsNode,
    StandInGroups,
    exchange,
    join,
    request,
    sync,
    versions,
)
from tests.unit.kafka.test_kauthz import AuthorizingSecurity, allow, denials, signed_in

OTHER_TOPIC = "payments"
OTHER_GROUP = "auditors"

ACLS = (
    allow("reader", AclOperation.READ, ResourceType.GROUP, GROUP),
    allow("reader", AclOperation.READ, ResourceType.TOPIC, TOPIC),
    allow("peeker", AclOperation.DESCRIBE, ResourceType.GROUP, GROUP),
    allow("peeker", AclOperation.DESCRIBE, ResourceType.TOPIC, TOPIC),
    allow("ops", AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"),
)

REFUSED_GROUP = ErrorCode.group_authorization_failed
REFUSED_TOPIC = ErrorCode.topic_authorization_failed


class CountingGroups(StandInGroups):
    """``StandInGroups`` that records every group a handler asked the coordinator about."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    async def route(self, group_id: str, *, forwarded: bool) -> OffsetsShard:
        self.asked.append(group_id)
        return await super().route(group_id, forwarded=forwarded)

    async def coordinator_id(self, group_id: str) -> int:
        self.asked.append(group_id)
        return await super().coordinator_id(group_id)


class SecuredGroupsNode(GroupsNode):
    groups: CountingGroups

    def __init__(self) -> None:
        super().__init__()
        self.groups = CountingGroups()
        self.security = AuthorizingSecurity(Authorizer(ACLS))


def as_user(user: str, node: GroupsNode, api_key: int, version: int, body: Any) -> Any:
    with signed_in(user):
        return exchange(node, api_key, version, body)


def joined_by_reader(node: SecuredGroupsNode) -> str:
    """A member of ``readers`` in generation 1 (joined and synced by ``reader``); its id."""
    with signed_in("reader"):
        member_id: str = join(node).member_id
        assert sync(node, 3, member_id, 1).error_code == ErrorCode.none
    node.groups.asked.clear()
    return member_id


def offsets_of(node: GroupsNode, group: str = GROUP) -> dict[tuple[str, int], int]:
    state = node.groups.shard.groups.get(group)
    return {key: committed.offset for key, committed in state.offsets.items()} if state else {}


# ------------------------------------------------------------------ FindCoordinator


@pytest.mark.parametrize("version", versions(FIND_COORDINATOR))
def test_find_coordinator_needs_describe_on_the_group_and_reveals_nothing_without(version: int) -> None:
    node = SecuredGroupsNode()

    def find(user: str) -> list[tuple[ErrorCode, int]]:
        if version >= 4:
            body = request(
                FIND_COORDINATOR, version, "FindCoordinatorRequest", key_type=i8(0), coordinator_keys=(GROUP,)
            )
            return [
                (c.error_code, c.node_id) for c in as_user(user, node, FIND_COORDINATOR, version, body).coordinators
            ]
        body = request(FIND_COORDINATOR, version, "FindCoordinatorRequest", key=GROUP, key_type=i8(0))
        answer = as_user(user, node, FIND_COORDINATOR, version, body)
        return [(answer.error_code, answer.node_id)]

    with capture_logs() as logs:
        assert find("mallory") == [(REFUSED_GROUP, -1)]
    assert node.groups.asked == []
    assert denials(logs) == [("DESCRIBE", "GROUP", GROUP)]
    assert find("peeker") == [(ErrorCode.none, 1)]


# ------------------------------------------------------------------ JoinGroup, SyncGroup, Heartbeat, LeaveGroup


@pytest.mark.parametrize("version", versions(JOIN))
def test_join_needs_read_on_the_group_and_a_refused_join_creates_no_group(version: int) -> None:
    node = SecuredGroupsNode()
    for user in ("mallory", "peeker"):
        with signed_in(user), capture_logs() as logs:
            answer = join(node, version)
        assert (answer.error_code, answer.generation_id, answer.members) == (REFUSED_GROUP, -1, ())
        assert denials(logs) == [("READ", "GROUP", GROUP)]
    assert node.groups.asked == []
    assert node.groups.shard.existing_group(GROUP) is None
    with signed_in("reader"):
        assert join(node, version).error_code == ErrorCode.none


def test_authorization_is_checked_before_the_coordinator_so_a_refusal_does_not_say_who_coordinates() -> None:
    with signed_in("mallory"):
        assert join(SecuredGroupsNode(), group=ELSEWHERE).error_code == REFUSED_GROUP


@pytest.mark.parametrize("version", versions(SYNC))
def test_sync_needs_read_on_the_group_and_a_refused_sync_neither_assigns_nor_advances(version: int) -> None:
    node = SecuredGroupsNode()
    with signed_in("reader"):
        member_id = join(node).member_id
    node.groups.asked.clear()
    with signed_in("peeker"):
        refused = sync(node, version, member_id, 1)
    assert (refused.error_code, refused.assignment) == (REFUSED_GROUP, b"")
    assert node.groups.asked == []
    classic = node.groups.shard.groups[GROUP].classic
    assert classic is not None
    assert classic.state == "CompletingRebalance"
    assert classic.members[member_id].assignment == b""
    with signed_in("reader"):
        assert sync(node, version, member_id, 1).assignment == b"assigned"


@pytest.mark.parametrize("version", versions(HEARTBEAT))
def test_heartbeat_needs_read_on_the_group(version: int) -> None:
    node = SecuredGroupsNode()
    member_id = joined_by_reader(node)
    body = request(
        HEARTBEAT,
        version,
        "HeartbeatRequest",
        group_id=GROUP,
        generation_id=i32(1),
        member_id=member_id,
        group_instance_id=None,
    )
    with capture_logs() as logs:
        assert as_user("peeker", node, HEARTBEAT, version, body).error_code == REFUSED_GROUP
    assert denials(logs) == [("READ", "GROUP", GROUP)]
    assert node.groups.asked == []
    assert as_user("reader", node, HEARTBEAT, version, body).error_code == ErrorCode.none


@pytest.mark.parametrize("version", versions(LEAVE))
def test_leave_needs_read_on_the_group_and_a_refused_leave_keeps_the_member(version: int) -> None:
    node = SecuredGroupsNode()
    member_id = joined_by_reader(node)
    if version >= 3:
        member = request(LEAVE, version, "MemberIdentity", member_id=member_id, group_instance_id=None, reason=None)
        body = request(LEAVE, version, "LeaveGroupRequest", group_id=GROUP, members=(member,))
    else:
        body = request(LEAVE, version, "LeaveGroupRequest", group_id=GROUP, member_id=member_id)
    refused = as_user("mallory", node, LEAVE, version, body)
    assert refused.error_code == REFUSED_GROUP
    assert getattr(refused, "members", ()) == ()
    classic = node.groups.shard.groups[GROUP].classic
    assert classic is not None and member_id in classic.members
    assert node.groups.asked == []
    assert as_user("reader", node, LEAVE, version, body).error_code == ErrorCode.none
    assert member_id not in classic.members


# ------------------------------------------------------------------ OffsetCommit


def commit_body(version: int, member_id: str, topics: dict[str, tuple[int, ...]], group: str = GROUP) -> Any:
    def partition(index: int) -> Any:
        return request(
            COMMIT,
            version,
            "OffsetCommitRequestPartition",
            partition_index=i32(index),
            committed_offset=i64(5 + index),
            committed_leader_epoch=i32(-1),
            committed_timestamp=i64(-1),
            committed_metadata="",
        )

    return request(
        COMMIT,
        version,
        "OffsetCommitRequest",
        group_id=group,
        generation_id_or_member_epoch=i32(1),
        member_id=member_id,
        group_instance_id=None,
        retention_time=i64Timedelta.parse(datetime.timedelta(milliseconds=-1)),
        topics=tuple(
            request(COMMIT, version, "OffsetCommitRequestTopic", name=name, partitions=tuple(map(partition, indexes)))
            for name, indexes in topics.items()
        ),
    )


def commit_codes(answer: Any) -> list[tuple[str, int, ErrorCode]]:
    return [(t.name, p.partition_index, p.error_code) for t in answer.topics for p in t.partitions]


@pytest.mark.parametrize("version", versions(COMMIT))
def test_commit_without_read_on_the_group_refuses_every_partition_and_writes_nothing(version: int) -> None:
    node = SecuredGroupsNode()
    member_id = joined_by_reader(node)
    body = commit_body(version, member_id, {TOPIC: (0, 1), OTHER_TOPIC: (0,)})
    with capture_logs() as logs:
        answer = as_user("peeker", node, COMMIT, version, body)
    assert commit_codes(answer) == [
        (TOPIC, 0, REFUSED_GROUP),
        (TOPIC, 1, REFUSED_GROUP),
        (OTHER_TOPIC, 0, REFUSED_GROUP),
    ]
    assert denials(logs) == [("READ", "GROUP", GROUP)], "no topic is checked once the group is refused"
    assert node.groups.commits == []
    assert offsets_of(node) == {}


@pytest.mark.parametrize("version", versions(COMMIT))
def test_commit_refuses_per_topic_the_topics_without_read_and_commits_only_the_others(version: int) -> None:
    node = SecuredGroupsNode()
    member_id = joined_by_reader(node)
    body = commit_body(version, member_id, {TOPIC: (0, 1), OTHER_TOPIC: (0, 2)})
    with capture_logs() as logs:
        answer = as_user("reader", node, COMMIT, version, body)
    assert commit_codes(answer) == [
        (TOPIC, 0, ErrorCode.none),
        (TOPIC, 1, ErrorCode.none),
        (OTHER_TOPIC, 0, REFUSED_TOPIC),
        (OTHER_TOPIC, 2, REFUSED_TOPIC),
    ]
    assert denials(logs) == [("READ", "TOPIC", OTHER_TOPIC)]
    assert offsets_of(node) == {(TOPIC, 0): 5, (TOPIC, 1): 6}


def test_a_commit_of_refused_topics_only_never_reaches_the_coordinator() -> None:
    node = SecuredGroupsNode()
    member_id = joined_by_reader(node)
    answer = as_user("reader", node, COMMIT, 9, commit_body(9, member_id, {OTHER_TOPIC: (0,)}))
    assert commit_codes(answer) == [(OTHER_TOPIC, 0, REFUSED_TOPIC)]
    assert node.groups.asked == []
    assert node.groups.commits == []


def test_a_refused_topic_does_not_hide_the_group_error_of_the_allowed_ones() -> None:
    node = SecuredGroupsNode()
    joined_by_reader(node)
    answer = as_user("reader", node, COMMIT, 9, commit_body(9, "stranger", {TOPIC: (0,), OTHER_TOPIC: (0,)}))
    assert commit_codes(answer) == [(TOPIC, 0, ErrorCode.unknown_member_id), (OTHER_TOPIC, 0, REFUSED_TOPIC)]
    assert offsets_of(node) == {}


# ------------------------------------------------------------------ OffsetFetch


def committed_node() -> SecuredGroupsNode:
    node = SecuredGroupsNode()
    state = node.groups.shard.group(GROUP)
    state.apply_commit((TOPIC, 0), CommittedOffset(6, "m", 0, 0))
    state.apply_commit((OTHER_TOPIC, 0), CommittedOffset(40, "secret", 0, 1))
    return node


def fetch_body(version: int, topics: dict[str, tuple[int, ...]] | None) -> Any:
    asked = (
        None
        if topics is None
        else tuple(
            request(FETCH, version, "OffsetFetchRequestTopic", name=name, partition_indexes=tuple(map(i32, indexes)))
            for name, indexes in topics.items()
        )
    )
    return request(FETCH, version, "OffsetFetchRequest", group_id=GROUP, topics=asked, require_stable=False)


def fetched(answer: Any) -> list[tuple[str, int, int, str, ErrorCode]]:
    return [
        (t.name, p.partition_index, p.committed_offset, p.metadata, p.error_code)
        for t in answer.topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", versions(FETCH))
def test_offset_fetch_without_describe_on_the_group_is_refused_and_shows_no_offset(version: int) -> None:
    node = committed_node()
    with capture_logs() as logs:
        answer = as_user("mallory", node, FETCH, version, fetch_body(version, {TOPIC: (0,)}))
    assert fetched(answer) == [(TOPIC, 0, -1, "", REFUSED_GROUP)]
    if version >= 2:
        assert answer.error_code == REFUSED_GROUP
        everything = as_user("mallory", node, FETCH, version, fetch_body(version, None))
        assert (everything.error_code, everything.topics) == (REFUSED_GROUP, ())
    assert denials(logs) == [("DESCRIBE", "GROUP", GROUP)]
    assert node.groups.asked == []


@pytest.mark.parametrize("version", versions(FETCH))
def test_offset_fetch_refuses_a_named_topic_without_describe(version: int) -> None:
    node = committed_node()
    with capture_logs() as logs:
        answer = as_user("peeker", node, FETCH, version, fetch_body(version, {TOPIC: (0,), OTHER_TOPIC: (0,)}))
    assert fetched(answer) == [(TOPIC, 0, 6, "m", ErrorCode.none), (OTHER_TOPIC, 0, -1, "", REFUSED_TOPIC)]
    if version >= 2:
        assert answer.error_code == ErrorCode.none
    assert denials(logs) == [("DESCRIBE", "TOPIC", OTHER_TOPIC)]


@pytest.mark.parametrize("version", [v for v in versions(FETCH) if v >= 2])
def test_an_all_topics_offset_fetch_leaves_out_the_topics_without_describe_unaudited(version: int) -> None:
    node = committed_node()
    with capture_logs() as logs:
        answer = as_user("peeker", node, FETCH, version, fetch_body(version, None))
    assert fetched(answer) == [(TOPIC, 0, 6, "m", ErrorCode.none)]
    assert denials(logs) == []


# ------------------------------------------------------------------ ListGroups, DescribeGroups


@pytest.mark.parametrize("version", versions(LIST))
def test_list_groups_lists_only_the_groups_the_principal_may_describe_and_all_with_the_cluster(version: int) -> None:
    node = committed_node()
    node.groups.shard.group(OTHER_GROUP).apply_commit((TOPIC, 0), CommittedOffset(1, "", 0, 2))
    body = request(LIST, version, "ListGroupsRequest", states_filter=())

    def listed(user: str) -> list[str]:
        answer = as_user(user, node, LIST, version, body)
        assert answer.error_code == ErrorCode.none
        return sorted(g.group_id for g in answer.groups)

    with capture_logs() as logs:
        assert listed("ops") == [OTHER_GROUP, GROUP]
        assert listed("peeker") == [GROUP]
        assert listed("reader") == [GROUP]
        assert listed("mallory") == []
    assert denials(logs) == [], "leaving a group out of a listing is no refusal"


@pytest.mark.parametrize("version", versions(DESCRIBE))
def test_describe_groups_refuses_each_group_without_describe_and_shows_none_of_it(version: int) -> None:
    node = SecuredGroupsNode()
    joined_by_reader(node)
    body = request(
        DESCRIBE, version, "DescribeGroupsRequest", groups=(GROUP, OTHER_GROUP), include_authorized_operations=False
    )
    with capture_logs() as logs:
        described, refused = as_user("peeker", node, DESCRIBE, version, body).groups
    assert (described.group_id, described.error_code, described.group_state) == (GROUP, ErrorCode.none, "Stable")
    assert len(described.members) == 1
    assert (refused.group_id, refused.error_code, refused.group_state, refused.members) == (
        OTHER_GROUP,
        REFUSED_GROUP,
        "",
        (),
    )
    assert denials(logs) == [("DESCRIBE", "GROUP", OTHER_GROUP)]
    hidden = as_user("mallory", node, DESCRIBE, version, body).groups
    assert [(g.error_code, g.members) for g in hidden] == [(REFUSED_GROUP, ()), (REFUSED_GROUP, ())]
    assert node.groups.asked == [GROUP]
