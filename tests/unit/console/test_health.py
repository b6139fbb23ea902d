"""Under-replicated, under-min-ISR and offline partition counts from partition records (pure)."""

from __future__ import annotations

from broker.cluster.records import PartitionRecord
from broker.console.health import partition_health


def record(topic: str, leader: int, isr: list[int], replicas: list[int]) -> PartitionRecord:
    return PartitionRecord(
        topic=topic, partition=0, leader=leader, leader_epoch=1, partition_epoch=1, replicas=replicas, isr=isr
    )


def test_each_partition_is_counted_by_what_its_record_says() -> None:
    records = [
        record("healthy", 1, [1, 2, 3], [1, 2, 3]),
        record("one-out", 1, [1, 2], [1, 2, 3]),
        record("two-out", 1, [1], [1, 2, 3]),
        record("offline", -1, [], [1, 2, 3]),
        record("rf1", 1, [1], [1]),
    ]
    min_isr = {"two-out": 2, "one-out": 2, "rf1": 2}
    assert partition_health(records, lambda topic: min_isr.get(topic, 1)) == {
        "under_replicated_partitions": 2,
        "under_min_isr_partitions": 1,
        "offline_partitions": 1,
    }


def test_min_isr_above_the_replication_factor_counts_as_the_replication_factor() -> None:
    assert partition_health([record("t", 1, [1, 2], [1, 2])], lambda topic: 3)["under_min_isr_partitions"] == 0
