"""Both followers down: the ISR falls below min.insync.replicas.

REPLICATION-REFERENCE scenario 2 and KIP-966's rule: acks=all is refused before the
append with NOT_ENOUGH_REPLICAS (nothing written); acks=1 is accepted but stays
invisible — the HW does not move while the ISR is below min ISR — until the followers
return and the ISR grows back, and then it becomes visible at its acknowledged offset.
"""

from __future__ import annotations

import time

import pytest

from tests.support.replication import (
    ReplicatedTopic,
    assert_replica_files_identical,
    decode_values,
)

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}


def test_below_min_isr_acks_all_is_refused_and_acks_1_stays_invisible(cluster) -> None:
    topic = ReplicatedTopic(cluster)
    topic.create()
    committed = [(topic.produce_ok(f"committed-{i}"), f"committed-{i}") for i in range(5)]
    leader = topic.describe()["leader_id"]
    followers = sorted(ALL_BROKERS - {leader})

    for follower in followers:
        cluster.brokers[follower].kill()
    lagged = (topic.produce_ok("leaves-the-followers-behind", acks="1"), "leaves-the-followers-behind")
    committed_hw = len(committed)
    alone = topic.wait_for_isr({leader}, timeout_s=10)
    assert alone["high_watermark"] == committed_hw
    end_before_refusal = alone["log_end_offset"]

    status, reply = topic.produce("refused", acks="all")
    assert status == 503, reply
    assert reply["error"] == "NOT_ENOUGH_REPLICAS" and reply["retriable"] is True
    after_refusal = topic.describe()
    assert after_refusal["log_end_offset"] == end_before_refusal, "a refused acks=all must write nothing"

    accepted = [(topic.produce_ok(f"acks1-{i}", acks="1"), f"acks1-{i}") for i in range(3)]
    assert [offset for offset, _ in accepted] == list(range(end_before_refusal, end_before_refusal + 3))
    time.sleep(0.5)
    invisible = topic.describe()
    assert invisible["high_watermark"] == committed_hw, "the HW moved while the ISR was below min ISR"
    page = topic.read_page(committed_hw, timeout_ms=300)
    assert page["data"] == [] and page["high_watermark"] == committed_hw
    assert topic.read_all() == committed

    for follower in followers:
        cluster.brokers[follower].start()
    healed = topic.wait_for_isr(ALL_BROKERS, timeout_s=15)
    assert healed["leader_id"] == leader
    visible = topic.read_all()
    assert visible == [*committed, lagged, *accepted], "acks=1 records lost, or the refused one written"
    assert healed["high_watermark"] == healed["log_end_offset"] == len(visible)
    assert decode_values(assert_replica_files_identical(cluster)) == visible
