"""``partition_state`` reads a partition's replicas from its record, also from a describe the leader did not answer."""

from __future__ import annotations

from tests.chaos.cluster import partition_state

LEADER_ANSWER = {
    "leader_id": 2,
    "leader_epoch": 0,
    "isr": [2, 3, 4],
    "replica_ids": [2, 3, 4],
    "high_watermark": 30,
    "log_end_offset": 30,
    "last_stable_offset": 30,
    "replicas_state": [
        {"broker_id": 2, "log_end_offset": 30, "in_sync": True},
        {"broker_id": 3, "log_end_offset": 30, "in_sync": True},
        {"broker_id": 4, "log_end_offset": 30, "in_sync": True},
    ],
}


def test_the_replicas_come_from_the_record_whoever_answered() -> None:
    answered = partition_state(LEADER_ANSWER)
    assert answered.replicas == (2, 3, 4) and set(answered.replica_leos) == {2, 3, 4} and answered.settled
    fallback = partition_state({key: value for key, value in LEADER_ANSWER.items() if key != "replicas_state"})
    assert fallback.replicas == (2, 3, 4), "a broker's own replica answered: the replica ids are still known"
    assert fallback.replica_leos == {} and not fallback.settled
