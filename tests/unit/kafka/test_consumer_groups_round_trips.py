"""ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) at every version, as a Kafka client sends them:
encoded by kio, routed, answered by the real handler over the real pure group state machine, decoded by kio."""

from __future__ import annotations

from typing import Any, cast

import pytest
from kio.schema.errors import ErrorCode
from structlog.testing import capture_logs

from broker.groups.classic import ClassicGroup
from broker.groups.coordinator import ClassicGroupInUse
from broker.groups.membership import HeartbeatRequest, HeartbeatResponse
from broker.groups.shard import OffsetsShard
from broker.kafka.authz import OPERATION_CODES
from broker.kafka.consumer_groups import CONSUMER_GROUP_DESCRIBE, CONSUMER_GROUP_HEARTBEAT
from broker.kafka.shapes import build
from broker.security.acl import AclOperation, ResourceType
from broker.security.authorizer import Authorizer
from tests.unit.kafka import requests
from tests.unit.kafka.stand_in import TOPIC, TOPIC_ID
from tests.unit.kafka.test_groups_round_trips import ELSEWHERE, GroupsNode, StandInGroups, exchange, versions
from tests.unit.kafka.test_kauthz import AuthorizingSecurity, allow, denials, signed_in

GROUP = "streamers"
CLASSIC = "classic-readers"
UNCHANGED_MS = -1


class ConsumerProtocolGroups(StandInGroups):
    """The coordinator's consumer-protocol calls too, answered by the same real shard and its real ``ConsumerGroup``s;
    the group ``CLASSIC`` has a classic member."""

    def __init__(self) -> None:
        super().__init__()
        classic = self.shard.group(CLASSIC)
        classic.classic = ClassicGroup(CLASSIC)
        classic.classic.members["old"] = cast(Any, object())

    def heartbeat(
        self, shard: OffsetsShard, group_id: str, request: HeartbeatRequest, assignor: str
    ) -> HeartbeatResponse:
        state = shard.group(group_id, assignor)
        if state.classic_members:
            raise ClassicGroupInUse(f"group {group_id!r} uses the classic protocol")
        return state.membership.heartbeat(request, {TOPIC: 1}, 0)

    def leave(self, shard: OffsetsShard, group_id: str, member_id: str) -> None:
        shard.group(group_id).membership.remove_member(member_id, "left")


class ConsumerGroupsNode(GroupsNode):
    groups: ConsumerProtocolGroups

    def __init__(self) -> None:
        super().__init__()
        self.groups = ConsumerProtocolGroups()


def beat(
    node: ConsumerGroupsNode,
    version: int,
    member_id: str,
    epoch: int,
    *,
    topics: tuple[str, ...] | None = None,
    owned: tuple[int, ...] | None = None,
    group: str = GROUP,
    instance: str | None = None,
    rebalance_ms: int = UNCHANGED_MS,
) -> Any:
    partitions = requests.request_class(CONSUMER_GROUP_HEARTBEAT, version, "TopicPartitions")
    body = build(
        requests.request_class(CONSUMER_GROUP_HEARTBEAT, version, "ConsumerGroupHeartbeatRequest"),
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        instance_id=instance,
        rebalance_timeout=requests.millis(rebalance_ms),
        subscribed_topic_names=topics,
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=None if owned is None else (build(partitions, topic_id=TOPIC_ID, partitions=owned),),
    )
    return exchange(node, CONSUMER_GROUP_HEARTBEAT, version, body)


def assigned(answer: Any) -> list[tuple[Any, list[int]]] | None:
    if answer.assignment is None:
        return None
    return [(tp.topic_id, list(tp.partitions)) for tp in answer.assignment.topic_partitions]


@pytest.mark.parametrize("version", versions(CONSUMER_GROUP_HEARTBEAT))
def test_a_member_joins_gets_the_partition_by_topic_id_and_hears_nothing_new_until_it_changes(version: int) -> None:
    node = ConsumerGroupsNode()
    joined = beat(node, version, "member-a", 0, topics=(TOPIC,), rebalance_ms=30_000)
    assert joined.error_code == ErrorCode.none and joined.member_id == "member-a"
    assert joined.member_epoch >= 1
    assert assigned(joined) == [(TOPIC_ID, [0])]
    assert joined.heartbeat_interval.total_seconds() * 1000 == node.settings.group_consumer_heartbeat_interval_ms
    again = beat(node, version, "member-a", joined.member_epoch)
    assert (again.error_code, again.member_epoch, again.assignment) == (ErrorCode.none, joined.member_epoch, None)


@pytest.mark.parametrize("version", versions(CONSUMER_GROUP_HEARTBEAT))
def test_a_partition_moves_to_a_new_member_only_after_its_owner_revoked_it(version: int) -> None:
    node = ConsumerGroupsNode()
    first = beat(node, version, "member-a", 0, topics=(TOPIC,))
    second = beat(node, version, "member-b", 0, topics=(TOPIC,))
    assert assigned(second) == []
    told = beat(node, version, "member-a", first.member_epoch)
    if assigned(told) == []:
        waiting = beat(node, version, "member-b", second.member_epoch)
        assert assigned(waiting) in (None, []), "not handed over before member-a acknowledged"
        acknowledged = beat(node, version, "member-a", told.member_epoch, owned=())
        assert acknowledged.error_code == ErrorCode.none
        taken = beat(node, version, "member-b", waiting.member_epoch)
        assert assigned(taken) == [(TOPIC_ID, [0])]
    else:
        assert assigned(told) is None, "the uniform assignor kept the partition with member-a"
    node.groups.shard.group(GROUP).membership.check_invariants()


@pytest.mark.parametrize("version", versions(CONSUMER_GROUP_HEARTBEAT))
def test_leaving_answers_epoch_minus_one_and_frees_the_partition(version: int) -> None:
    node = ConsumerGroupsNode()
    joined = beat(node, version, "member-a", 0, topics=(TOPIC,))
    left = beat(node, version, "member-a", -1)
    assert (left.error_code, left.member_epoch) == (ErrorCode.none, -1)
    assert node.groups.shard.group(GROUP).membership.members == {}
    assert joined.member_epoch >= 1


def test_v0_names_a_member_that_sends_no_id_and_v1_refuses_it() -> None:
    node = ConsumerGroupsNode()
    named = beat(node, 0, "", 0, topics=(TOPIC,))
    assert named.error_code == ErrorCode.none and len(named.member_id) == 22
    refused = beat(node, 1, "", 0, topics=(TOPIC,))
    assert (refused.error_code, refused.error_message) == (ErrorCode.invalid_request, "the member id must not be empty")


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [
        ({"member_id": "ghost", "epoch": 4}, ErrorCode.unknown_member_id),
        ({"member_id": "new", "epoch": 0}, ErrorCode.invalid_request),
        ({"member_id": "static", "epoch": 0, "topics": (TOPIC,), "instance": "i-1"}, ErrorCode.invalid_request),
        ({"member_id": "far", "epoch": 0, "topics": (TOPIC,), "group": ELSEWHERE}, ErrorCode.not_coordinator),
        ({"member_id": "mixed", "epoch": 0, "topics": (TOPIC,), "group": CLASSIC}, ErrorCode.group_id_not_found),
    ],
)
def test_each_refusal_is_kafkas_code_with_a_message_and_changes_nothing(
    kwargs: dict[str, Any], code: ErrorCode
) -> None:
    node = ConsumerGroupsNode()
    member_id, epoch = kwargs.pop("member_id"), kwargs.pop("epoch")
    answer = beat(node, 1, member_id, epoch, **kwargs)
    assert answer.error_code == code and answer.error_message
    assert answer.assignment is None
    assert node.groups.shard.group(GROUP).membership.members == {}


@pytest.mark.parametrize("version", versions(CONSUMER_GROUP_DESCRIBE))
def test_describe_shows_members_with_topic_ids_and_names_and_refuses_other_groups(version: int) -> None:
    node = ConsumerGroupsNode()
    joined = beat(node, 1, "member-a", 0, topics=(TOPIC,))
    body = build(
        requests.request_class(CONSUMER_GROUP_DESCRIBE, version, "ConsumerGroupDescribeRequest"),
        group_ids=(GROUP, CLASSIC, "never-was", ELSEWHERE),
        include_authorized_operations=False,
    )
    described, classic, missing, elsewhere = exchange(node, CONSUMER_GROUP_DESCRIBE, version, body).groups
    assert (described.error_code, described.group_state, described.assignor_name) == (
        ErrorCode.none,
        "Stable",
        "uniform",
    )
    [member] = described.members
    assert (member.member_id, member.member_epoch, list(member.subscribed_topic_names)) == (
        "member-a",
        joined.member_epoch,
        [TOPIC],
    )
    [(topic_id, name, partitions)] = [
        (t.topic_id, t.topic_name, list(t.partitions)) for t in member.assignment.topic_partitions
    ]
    assert (topic_id, name, partitions) == (TOPIC_ID, TOPIC, [0])
    assert [g.error_code for g in (classic, missing, elsewhere)] == [
        ErrorCode.group_id_not_found,
        ErrorCode.group_id_not_found,
        ErrorCode.not_coordinator,
    ]


# ------------------------------------------------------------------ authorization


ACLS = (
    allow("reader", AclOperation.READ, ResourceType.GROUP, GROUP),
    allow("reader", AclOperation.DESCRIBE, ResourceType.TOPIC, TOPIC),
    allow("blind", AclOperation.READ, ResourceType.GROUP, GROUP),
    allow("peeker", AclOperation.DESCRIBE, ResourceType.GROUP, GROUP),
)


class SecuredGroupsNode(ConsumerGroupsNode):
    def __init__(self) -> None:
        super().__init__()
        self.security = AuthorizingSecurity(Authorizer(ACLS))


@pytest.mark.parametrize(
    ("user", "code", "denied"),
    [
        ("mallory", ErrorCode.group_authorization_failed, ("READ", "GROUP", GROUP)),
        ("peeker", ErrorCode.group_authorization_failed, ("READ", "GROUP", GROUP)),
        ("blind", ErrorCode.topic_authorization_failed, ("DESCRIBE", "TOPIC", TOPIC)),
    ],
)
def test_a_heartbeat_needs_read_on_the_group_and_describe_on_each_topic_and_a_refused_one_joins_nothing(
    user: str, code: ErrorCode, denied: tuple[str, str, str]
) -> None:
    node = SecuredGroupsNode()
    with capture_logs() as logs, signed_in(user):
        answer = beat(node, 1, "member-a", 0, topics=(TOPIC,))
    assert (answer.error_code, answer.assignment) == (code, None)
    assert denials(logs) == [denied]
    assert node.groups.shard.groups.get(GROUP) is None
    with signed_in("reader"):
        assert assigned(beat(node, 1, "member-a", 0, topics=(TOPIC,))) == [(TOPIC_ID, [0])]


def test_a_describe_needs_describe_on_each_group() -> None:
    node = SecuredGroupsNode()
    with signed_in("reader"):
        beat(node, 1, "member-a", 0, topics=(TOPIC,))
    body = build(
        requests.request_class(CONSUMER_GROUP_DESCRIBE, 1, "ConsumerGroupDescribeRequest"),
        group_ids=(GROUP,),
        include_authorized_operations=True,
    )
    with capture_logs() as logs, signed_in("mallory"):
        [refused] = exchange(node, CONSUMER_GROUP_DESCRIBE, 1, body).groups
    assert (refused.error_code, refused.members) == (ErrorCode.group_authorization_failed, ())
    assert denials(logs) == [("DESCRIBE", "GROUP", GROUP)]
    with signed_in("peeker"):
        [described] = exchange(node, CONSUMER_GROUP_DESCRIBE, 1, body).groups
    assert described.error_code == ErrorCode.none and len(described.members) == 1
    assert described.authorized_operations == 1 << OPERATION_CODES[AclOperation.DESCRIBE]
