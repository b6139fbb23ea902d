"""ISR-change classification and the bounded per-topic event ring (pure: records in, events out)."""

from __future__ import annotations

from broker.cluster.records import PartitionRecord
from broker.console.isr_events import IsrEventLog, classify


def record(
    leader: int, isr: list[int], *, leader_epoch: int = 1, partition: int = 0, topic: str = "t"
) -> PartitionRecord:
    return PartitionRecord(
        topic=topic,
        partition=partition,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=1,
        replicas=[1, 2, 3],
        isr=isr,
    )


def kinds(previous: PartitionRecord | None, current: PartitionRecord) -> list[str]:
    return [event.kind for event in classify(previous, current, 1000)]


def test_the_first_record_of_a_partition_is_its_creation_not_a_change() -> None:
    assert kinds(None, record(1, [1, 2, 3])) == []


def test_an_unchanged_record_gives_nothing() -> None:
    assert kinds(record(1, [1, 2, 3]), record(1, [3, 2, 1])) == []


def test_a_removed_follower_is_a_shrink_and_its_return_an_expand() -> None:
    shrink = classify(record(1, [1, 2, 3]), record(1, [1, 2]), 1000)
    assert [(e.kind, e.isr, e.previous_isr, e.leader_id, e.time_ms) for e in shrink] == [
        ("shrink", (1, 2), (1, 2, 3), 1, 1000)
    ]
    assert kinds(record(1, [1, 2]), record(1, [1, 2, 3])) == ["expand"]


def test_a_failed_leader_moved_away_and_removed_in_one_write_is_both_events() -> None:
    assert kinds(record(1, [1, 2, 3]), record(2, [2, 3], leader_epoch=2)) == ["leader_change", "shrink"]


def test_a_re_election_of_the_same_leader_is_a_leader_change() -> None:
    assert kinds(record(1, [1, 2, 3]), record(1, [1, 2, 3], leader_epoch=2)) == ["leader_change"]


def test_a_member_swapped_for_another_is_a_shrink_and_an_expand() -> None:
    assert kinds(record(1, [1, 2]), record(1, [1, 3])) == ["shrink", "expand"]


def test_the_log_lists_newest_first_per_topic_and_keeps_at_most_its_bound() -> None:
    log = IsrEventLog(per_topic=3)
    log.observe(record(1, [1, 2, 3]), 0)
    log.observe(record(1, [1, 2, 3], topic="other"), 0)
    for step in range(1, 6):
        log.observe(record(1, [1, 2] if step % 2 else [1, 2, 3]), step)
    events = log.newest_first("t")
    assert [(e.time_ms, e.kind) for e in events] == [(5, "shrink"), (4, "expand"), (3, "shrink")]
    assert log.newest_first("other") == []


def test_a_deleted_partition_forgets_its_events_and_its_last_record() -> None:
    log = IsrEventLog()
    log.observe(record(1, [1, 2, 3]), 0)
    log.observe(record(1, [1, 2, 3], partition=1), 0)
    log.observe(record(1, [1, 2]), 1)
    log.observe(record(1, [1, 2], partition=1), 1)
    log.forget("t", 0)
    assert [e.partition_id for e in log.newest_first("t")] == [1]
    assert log.observe(record(1, [1]), 2) == []
    log.forget("t", 1)
    assert log.newest_first("t") == []


def test_an_event_body_has_the_documented_fields() -> None:
    (event,) = classify(record(1, [1, 2, 3]), record(1, [1, 3]), 7)
    assert event.to_body() == {
        "time_ms": 7,
        "partition_id": 0,
        "kind": "shrink",
        "leader_id": 1,
        "leader_epoch": 1,
        "isr": [1, 3],
        "previous_isr": [1, 2, 3],
    }
