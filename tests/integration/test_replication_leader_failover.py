"""The leader is SIGKILLed under acks=all load, five times in a row.

REPLICATION-REFERENCE scenario 3: each time a new leader is elected from the ISR with
a strictly higher leader epoch, nothing acknowledged is lost (every acknowledged value
is on the final leader exactly once, at the offset it was acknowledged with), readers'
positions never go back, nor does the "latest" offset any broker answers (KIP-207), and the killed leader truncates its unacknowledged tail when
it returns, so the replicas' files end up identical.

The unavailability window each kill causes is measured by
``python -m tests.benchmarks.replication_failover``, not asserted here.
"""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster
from tests.support.replication import (
    TOPIC,
    assert_replica_files_identical,
    create_replicated,
    decode_values,
    read_all,
)
from tests.support.replication_load import (
    BackgroundConsumer,
    BackgroundProducer,
    LatestOffsetWatcher,
    kill_leader_under_load,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
ROUNDS = 5


def test_five_leader_kills_under_acks_all_load_lose_nothing_acknowledged(cluster: Cluster) -> None:
    description = create_replicated(cluster)
    producer = BackgroundProducer(cluster).start()
    consumer = BackgroundConsumer(cluster).start()
    watcher = LatestOffsetWatcher(cluster, TOPIC, (0,)).start()
    epochs = [description["leader_epoch"]]
    try:
        for _ in range(ROUNDS):
            description, _unavailable_s = kill_leader_under_load(cluster, producer, description, ALL_BROKERS)
            epochs.append(description["leader_epoch"])
        wait_until(lambda: len(producer.acknowledged) >= 20 + ROUNDS, "writes after the last round", 10)
    finally:
        producer.stop()
        consumer.stop()
        watcher.stop()

    assert watcher.violations == [], watcher.violations[:5]
    assert watcher.answers > 0, watcher.errors[:5]
    assert epochs == sorted(set(epochs)), f"leader epochs must strictly increase: {epochs}"
    final = read_all(cluster)
    assert [offset for offset, _ in final] == list(range(len(final))), "offsets must be dense"
    values = [value for _, value in final]
    assert len(values) == len(set(values)), "a value appears twice"
    at_offset = dict(final)
    lost = [a for a in producer.acknowledged if at_offset.get(a.offset) != a.value]
    assert not lost, f"{len(lost)} acknowledged records lost or moved, first: {lost[:3]}"
    assert consumer.violations == []
    assert len(consumer.seen) > 0 and set(consumer.seen) <= set(final), "a reader saw a record that is gone"
    assert decode_values(assert_replica_files_identical(cluster)) == final
