"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), every supported version: encoded by
kio as Kafka's admin client sends them, answered by the real handlers against a stand-in whose controller
gateway moves partitions with the real rules (``broker.cluster.reassignment``), decoded as a client decodes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from broker.cluster.reassignment import PartitionMove, check_target, is_moving, original_replicas, reassign
from broker.cluster.records import PartitionRecord
from broker.errors import UnknownPartition
from broker.security.acl import AclOperation, ResourceType
from broker.security.authorizer import Authorizer
from tests.unit.kafka.requests import alter_partition_reassignments, list_partition_reassignments
from tests.unit.kafka.stand_in import TOPIC
from tests.unit.kafka.test_kadmin import AdminStandIn, exchange, versions
from tests.unit.kafka.test_kauthz import AuthorizingSecurity, allow, as_user

ALTER, LIST = 45, 46
LIVE = (1, 2, 3, 4)


@dataclass
class MovingStandIn(AdminStandIn):
    """Partitions 0 and 1 of the stand-in's topic on [1, 2, 3], moved as the controller moves them."""

    records: dict[int, PartitionRecord] = field(
        default_factory=lambda: {
            p: PartitionRecord(
                topic=TOPIC, partition=p, leader=1, leader_epoch=7, partition_epoch=3, replicas=[1, 2, 3], isr=[1, 2, 3]
            )
            for p in (0, 1)
        }
    )

    def partition_count(self, topic: str) -> int:
        self.topic(topic)
        return len(self.records)

    def partition_record(self, topic: str, partition: int) -> PartitionRecord:
        self.topic(topic)
        if partition not in self.records:
            raise UnknownPartition(f"topic '{topic}' has no partition {partition}", topic_name=topic)
        return self.records[partition]

    async def alter_reassignments(self, moves: list[PartitionMove]) -> list[PartitionRecord]:
        for move in moves:
            record = self.partition_record(move.topic, move.partition)
            target = original_replicas(record) if move.replicas is None else move.replicas
            if move.replicas is not None:
                check_target(record, target, 2, LIVE)
            change = reassign(record, target, LIVE)
            if change is not None:
                self.records[move.partition] = change.record
        return [self.records[move.partition] for move in moves]


def _answers(response: Any) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
    return {
        (t.name, p.partition_index): (p.error_code, p.error_message) for t in response.responses for p in t.partitions
    }


@pytest.mark.parametrize("version", versions(ALTER))
def test_each_partition_is_moved_or_refused_on_its_own_and_the_listing_shows_the_moves(version: int) -> None:
    node = MovingStandIn()
    body = alter_partition_reassignments(
        version, [(TOPIC, 0, [2, 3, 4]), (TOPIC, 1, [2, 9, 3]), (TOPIC, 5, [1, 2, 3]), ("missing", 0, [1, 2, 3])]
    )
    response = exchange(node, ALTER, version, body)
    assert response.error_code == ErrorCode.none
    answers = _answers(response)
    assert answers[(TOPIC, 0)] == (ErrorCode.none, None)
    assert answers[(TOPIC, 1)][0] == ErrorCode.invalid_replica_assignment
    assert "broker 9" in (answers[(TOPIC, 1)][1] or "")
    assert answers[(TOPIC, 5)][0] == ErrorCode.unknown_topic_or_partition
    assert answers[("missing", 0)][0] == ErrorCode.unknown_topic_or_partition
    assert is_moving(node.records[0]) and not is_moving(node.records[1]), "a refused partition moved"

    listed = exchange(node, LIST, 0, list_partition_reassignments(0, None))
    [topic] = listed.topics
    [moving] = topic.partitions
    assert (topic.name, moving.partition_index) == (TOPIC, 0)
    assert (list(moving.replicas), list(moving.adding_replicas), list(moving.removing_replicas)) == (
        [2, 3, 4, 1],
        [4],
        [1],
    )
    assert exchange(node, LIST, 0, list_partition_reassignments(0, {TOPIC: [1]})).topics == ()


@pytest.mark.parametrize("version", versions(ALTER))
def test_cancelling_returns_to_the_original_replicas_and_a_partition_not_moving_says_so(version: int) -> None:
    node = MovingStandIn()
    exchange(node, ALTER, version, alter_partition_reassignments(version, [(TOPIC, 0, [2, 3, 4])]))
    response = exchange(
        node, ALTER, version, alter_partition_reassignments(version, [(TOPIC, 0, None), (TOPIC, 1, None)])
    )
    answers = _answers(response)
    assert answers[(TOPIC, 0)] == (ErrorCode.none, None)
    assert answers[(TOPIC, 1)] == (
        ErrorCode.no_reassignment_in_progress,
        f"no reassignment is in progress for {TOPIC}-1",
    )
    assert sorted(node.records[0].replicas) == [1, 2, 3] and not is_moving(node.records[0]), (
        "in the order the move left"
    )


@pytest.mark.parametrize("version", versions(ALTER))
def test_a_target_of_another_length_changes_the_replication_factor_unless_the_request_forbids_it(
    version: int,
) -> None:
    node = MovingStandIn()
    body = alter_partition_reassignments(version, [(TOPIC, 0, [1, 2, 3, 4]), (TOPIC, 1, [1, 2])])
    assert _answers(exchange(node, ALTER, version, body)) == {
        (TOPIC, 0): (ErrorCode.none, None),
        (TOPIC, 1): (ErrorCode.none, None),
    }
    assert (node.records[0].replicas, node.records[0].adding_replicas) == ([1, 2, 3, 4], [4])
    assert (node.records[1].replicas, is_moving(node.records[1])) == ([1, 2], False)

    below = _answers(exchange(node, ALTER, version, alter_partition_reassignments(version, [(TOPIC, 1, [1])])))
    assert below[(TOPIC, 1)][0] == ErrorCode.invalid_replica_assignment
    assert "needs 2 in sync" in (below[(TOPIC, 1)][1] or "")


def test_a_request_that_forbids_a_replication_factor_change_moves_only_at_the_same_count() -> None:
    """KIP-860 (version 1): ``allow_replication_factor_change`` false refuses a target of another length."""
    node = MovingStandIn()
    body = alter_partition_reassignments(1, [(TOPIC, 0, [1, 2, 3, 4]), (TOPIC, 1, [2, 3, 4])], False)
    response = exchange(node, ALTER, 1, body)
    assert response.allow_replication_factor_change is False
    answers = _answers(response)
    assert answers[(TOPIC, 0)] == (
        ErrorCode.invalid_replication_factor,
        f"{TOPIC}-0: the target changes its replication factor from 3 to 4 but allow_replication_factor_change "
        "is false",
    )
    assert answers[(TOPIC, 1)] == (ErrorCode.none, None)
    assert (node.records[0].replicas, is_moving(node.records[1])) == ([1, 2, 3], True)


@dataclass
class SecuredMovingStandIn(MovingStandIn):
    security: AuthorizingSecurity = field(
        default_factory=lambda: AuthorizingSecurity(
            Authorizer(
                (
                    allow("ops", AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster"),
                    allow("ops", AclOperation.DESCRIBE, ResourceType.CLUSTER, "kafka-cluster"),
                )
            )
        )
    )


@pytest.mark.parametrize("version", versions(ALTER))
def test_moving_needs_alter_and_listing_describe_on_the_cluster(version: int) -> None:
    node = SecuredMovingStandIn()
    refused = as_user("mallory", node, ALTER, version, alter_partition_reassignments(version, [(TOPIC, 0, [2, 3, 4])]))
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert refused.error_message == "User:mallory is not authorized to ALTER cluster 'kafka-cluster'"
    assert [code for code, _ in _answers(refused).values()] == [ErrorCode.cluster_authorization_failed]
    assert not is_moving(node.records[0])
    assert (
        as_user("mallory", node, LIST, 0, list_partition_reassignments(0, None)).error_code
        == ErrorCode.cluster_authorization_failed
    )

    allowed = as_user("ops", node, ALTER, version, alter_partition_reassignments(version, [(TOPIC, 0, [2, 3, 4])]))
    assert _answers(allowed) == {(TOPIC, 0): (ErrorCode.none, None)}
    assert [t.name for t in as_user("ops", node, LIST, 0, list_partition_reassignments(0, None)).topics] == [TOPIC]
