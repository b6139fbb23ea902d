"""A move's progress in bytes: each new replica's log against its leader's, summed over the moving partitions."""

from __future__ import annotations

from broker.cli.moves import copied_bytes

PARTITIONS = [
    {"topic_name": "t", "partition_id": 0, "leader_id": 1},
    {"topic_name": "t", "partition_id": 1, "leader_id": 2},
    {"topic_name": "u", "partition_id": 0, "leader_id": 1},
]


def test_bytes_copied_count_each_adding_replica_against_its_leader() -> None:
    moving = {("t", 0): {"adding_replicas": [3, 4]}, ("t", 1): {"adding_replicas": [4]}}
    sizes = {1: {("t", 0): 1000, ("u", 0): 50}, 2: {("t", 1): 300}, 3: {("t", 0): 1000}, 4: {("t", 0): 250}}
    assert copied_bytes(PARTITIONS, moving, sizes) == (1000 + 250, 2 * 1000 + 300)


def test_a_copy_never_counts_more_than_its_leader_holds_and_a_partition_not_moving_counts_nothing() -> None:
    moving = {("t", 0): {"adding_replicas": [3]}}
    sizes = {1: {("t", 0): 400}, 3: {("t", 0): 900, ("u", 0): 50}}
    assert copied_bytes(PARTITIONS, moving, sizes) == (400, 400)
    assert copied_bytes(PARTITIONS, {}, sizes) == (0, 0)


def test_a_broker_that_did_not_answer_yet_counts_as_holding_nothing() -> None:
    moving = {("t", 1): {"adding_replicas": [4]}}
    assert copied_bytes(PARTITIONS, moving, {2: {("t", 1): 300}}) == (0, 300)
