"""Readers see only committed records: never an offset at or above the high watermark.

REPLICATION-REFERENCE scenario 15, checked against what survives. A consumer
long-polls all along (through any broker) while, twice, the leader takes acks=1
writes with both followers stopped and is then SIGKILLed, so those writes are lost.
Every page the consumer got must lie below the HW it was served with, start at its
position and be dense; every record it saw must still be in the final log at the
same offset; and none of the lost writes may ever have been seen.
"""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster
from tests.support.replication import (
    TOPIC,
    assert_replica_files_identical,
    create_replicated,
    decode_values,
    produce_ok,
    read_all,
    wait_for_isr,
    wait_for_leader,
    write_unreplicated_tail_then_kill_leader,
)
from tests.support.replication_load import BackgroundConsumer
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
ROUNDS = 2


def test_consumer_never_sees_a_record_that_a_leader_crash_takes_back(cluster: Cluster) -> None:
    description = create_replicated(cluster)
    consumer = BackgroundConsumer(cluster).start()
    unreplicated: list[tuple[int, str]] = []
    try:
        for round_number in range(ROUNDS):
            for i in range(10):
                produce_ok(cluster, TOPIC, f"round-{round_number}-committed-{i}")
            leader = description["leader_id"]
            unreplicated += write_unreplicated_tail_then_kill_leader(
                cluster, leader, count=5, label=f"round-{round_number}-unreplicated", exposed_s=0.5
            )
            description = wait_for_leader(cluster, excluding=leader)
            cluster.brokers[leader].start()
            description = wait_for_isr(cluster, TOPIC, ALL_BROKERS, timeout_s=15)
        end = produce_ok(cluster, TOPIC, "last") + 1
        wait_until(lambda: consumer.position >= end, "the consumer to read to the end", 10)
    finally:
        consumer.stop()

    final = read_all(cluster)
    assert [offset for offset, _ in final] == list(range(len(final)))
    assert consumer.violations == []
    assert consumer.seen == final, "the consumer saw something other than the surviving log"
    survived = set(final)
    lost = [record for record in unreplicated if record not in survived]
    assert lost, "the scenario should lose the unreplicated acks=1 writes it is about"
    assert not set(lost) & set(consumer.seen)
    assert decode_values(assert_replica_files_identical(cluster)) == final
