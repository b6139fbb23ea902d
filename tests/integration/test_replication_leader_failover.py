"""The leader is SIGKILLed under acks=all load, five times in a row.

REPLICATION-REFERENCE scenario 3: each time a new leader is elected from the ISR with
a strictly higher leader epoch, nothing acknowledged is lost (every acknowledged value
is on the final leader exactly once, at the offset it was acknowledged with), readers'
positions never go back, and the killed leader truncates its unacknowledged tail when
it returns, so the replicas' files end up identical.

Also measures the unavailability window: from the SIGKILL until the first acks=all
produce sent after it succeeds (the median of the five is printed).
"""

from __future__ import annotations

import statistics
import time

import pytest

from tests.support.replication import (
    BROKER_SESSION_TIMEOUT_MS,
    ReplicatedTopic,
    assert_replica_files_identical,
    decode_values,
    wait_until,
)
from tests.support.replication_load import BackgroundConsumer, BackgroundProducer

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
ROUNDS = 5
UNAVAILABILITY_BOUND_S = BROKER_SESSION_TIMEOUT_MS / 1000 + 6
"""Detection (the session timeout) + election + the producer's retry; generous for a loaded CI box."""


def _kill_leader_and_wait_for_writes(
    topic: ReplicatedTopic, producer: BackgroundProducer, previous: dict
) -> tuple[dict, float]:
    """One round: SIGKILL the leader, wait for acks=all to succeed again; return the new state."""
    leader = previous["leader_id"]
    wait_until(lambda: len(producer.acknowledged) >= 20, 10, "acknowledged writes before the kill")
    topic.cluster.brokers[leader].kill()
    killed_at = time.monotonic()
    resumed = wait_until(
        lambda: producer.first_success_started_after(killed_at), UNAVAILABILITY_BOUND_S, "acks=all after the kill"
    )
    unavailable_s = resumed.ended_s - killed_at
    elected = topic.wait_for_leader(excluding=leader)
    assert elected["leader_epoch"] > previous["leader_epoch"], (previous, elected)
    assert elected["leader_id"] in previous["isr"], "a clean election picks an ISR member"
    topic.cluster.brokers[leader].start()
    return topic.wait_for_isr(ALL_BROKERS, timeout_s=15), unavailable_s


def test_five_leader_kills_under_acks_all_load_lose_nothing_acknowledged(cluster) -> None:
    topic = ReplicatedTopic(cluster)
    description = topic.create()
    producer = BackgroundProducer(topic).start()
    consumer = BackgroundConsumer(topic).start()
    epochs = [description["leader_epoch"]]
    windows_s = []
    try:
        for _ in range(ROUNDS):
            description, unavailable_s = _kill_leader_and_wait_for_writes(topic, producer, description)
            epochs.append(description["leader_epoch"])
            windows_s.append(unavailable_s)
        wait_until(lambda: len(producer.acknowledged) >= 20 + len(windows_s), 10, "writes after the last round")
    finally:
        producer.stop()
        consumer.stop()
    print(
        f"\nunavailability after leader SIGKILL: median {statistics.median(windows_s):.2f} s, "
        f"each {[round(w, 2) for w in windows_s]} (session timeout {BROKER_SESSION_TIMEOUT_MS} ms)"
    )

    assert epochs == sorted(set(epochs)), f"leader epochs must strictly increase: {epochs}"
    final = topic.read_all()
    assert [offset for offset, _ in final] == list(range(len(final))), "offsets must be dense"
    values = [value for _, value in final]
    assert len(values) == len(set(values)), "a value appears twice"
    at_offset = dict(final)
    lost = [a for a in producer.acknowledged if at_offset.get(a.offset) != a.value]
    assert not lost, f"{len(lost)} acknowledged records lost or moved, first: {lost[:3]}"
    assert consumer.violations == []
    assert len(consumer.seen) > 0 and set(consumer.seen) <= set(final), "a reader saw a record that is gone"
    assert decode_values(assert_replica_files_identical(cluster)) == final
