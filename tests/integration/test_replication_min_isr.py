"""Both followers down: the ISR falls below min.insync.replicas.

REPLICATION-REFERENCE scenario 2 and KIP-966's rule: acks=all is refused before the
append with NOT_ENOUGH_REPLICAS (nothing written); acks=1 is accepted but stays
invisible — the HW does not move while the ISR is below min ISR — until the followers
return and the ISR grows back, and then it becomes visible at its acknowledged offset.
"""

from __future__ import annotations

import pytest

from tests.support.cluster import Cluster
from tests.support.replication import (
    TOPIC,
    assert_replica_files_identical,
    create_replicated,
    decode_values,
    describe,
    produce_ok,
    produce_one,
    read_all,
    read_page,
    wait_for_isr,
)

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
HELD_BACK_WATCH_MS = 800
"""How long a reader long-polls above the committed HW: the broker answers at once if the
HW moves in that time, so an empty page proves it stood still throughout."""


def test_below_min_isr_acks_all_is_refused_and_acks_1_stays_invisible(cluster: Cluster) -> None:
    create_replicated(cluster)
    committed = [(produce_ok(cluster, TOPIC, f"committed-{i}"), f"committed-{i}") for i in range(5)]
    leader = describe(cluster)["leader_id"]
    followers = sorted(ALL_BROKERS - {leader})

    for follower in followers:
        cluster.brokers[follower].kill()
    lagged = (produce_ok(cluster, TOPIC, "leaves-the-followers-behind", acks="1"), "leaves-the-followers-behind")
    committed_hw = len(committed)
    alone = wait_for_isr(cluster, TOPIC, {leader}, timeout_s=10)
    assert alone["high_watermark"] == committed_hw
    end_before_refusal = alone["log_end_offset"]

    status, reply = produce_one(cluster, TOPIC, "refused", acks="all")
    assert status == 503, reply
    assert reply["error"] == "NOT_ENOUGH_REPLICAS" and reply["retriable"] is True
    after_refusal = describe(cluster)
    assert after_refusal["log_end_offset"] == end_before_refusal, "a refused acks=all must write nothing"

    accepted = [(produce_ok(cluster, TOPIC, f"acks1-{i}", acks="1"), f"acks1-{i}") for i in range(3)]
    assert [offset for offset, _ in accepted] == list(range(end_before_refusal, end_before_refusal + 3))
    page = read_page(cluster, TOPIC, committed_hw, timeout_ms=HELD_BACK_WATCH_MS)
    assert page["data"] == [] and page["high_watermark"] == committed_hw
    invisible = describe(cluster)
    assert invisible["high_watermark"] == committed_hw, "the HW moved while the ISR was below min ISR"
    assert read_all(cluster) == committed

    for follower in followers:
        cluster.brokers[follower].start()
    healed = wait_for_isr(cluster, TOPIC, ALL_BROKERS, timeout_s=15)
    assert healed["leader_id"] == leader
    visible = read_all(cluster)
    assert visible == [*committed, lagged, *accepted], "acks=1 records lost, or the refused one written"
    assert healed["high_watermark"] == healed["log_end_offset"] == len(visible)
    assert decode_values(assert_replica_files_identical(cluster)) == visible
