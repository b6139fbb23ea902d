"""ISR shrink and expand on the leader (Partition maybeShrinkIsr / maybeExpandIsr, KIP-497)."""

from broker.replication import ProposeIsr
from tests.unit.replication.factories import LAG_MS, fetch, make_leader


def test_follower_keeping_up_with_a_steady_stream_of_small_writes_stays_in_sync():
    """Caught-up rule, second branch (scenario 7): one write lands between any two
    fetches, so the follower never fetches at the leader's *current* LEO, but always
    at the LEO the leader had at its previous fetch; it must never be removed."""
    leader = make_leader(replicas=(1, 2), isr=(1, 2), min_insync_replicas=2)
    now_ms, follower_offset = 0, 0
    for _ in range(2_000):  # 100 s of writes every 50 ms, lag time 10 s
        now_ms += 50
        leader.on_leader_append(leader.log_end_offset + 1, now_ms)
        assert follower_offset < leader.log_end_offset
        fetch(leader, 2, follower_offset, now_ms)
        follower_offset = leader.log_end_offset  # the response carried everything up to here
        assert leader.check_isr_shrink(now_ms) is None
    assert leader.isr == (1, 2)
    assert leader.high_watermark == leader.log_end_offset - 1


def test_slow_follower_that_keeps_fetching_but_never_catches_up_is_removed():
    """Shrink rule: not caught up for replica_lag_time_max_ms -> removed, although it
    fetches every 100 ms (scenario 7): 10 records written per step, 5 replicated."""
    leader = make_leader(replicas=(1, 2, 3), min_insync_replicas=2)
    now_ms, slow_offset = 0, 0
    removed_at = None
    while removed_at is None and now_ms < 5 * LAG_MS:
        now_ms += 100
        leader.on_leader_append(leader.log_end_offset + 10, now_ms)
        fetch(leader, 3, leader.log_end_offset, now_ms)
        fetch(leader, 2, slow_offset, now_ms)
        slow_offset += 5
        proposal = leader.check_isr_shrink(now_ms)
        if proposal is not None:
            removed_at = now_ms
    assert proposal == ProposeIsr(
        topic="orders",
        partition=0,
        leader_id=1,
        leader_epoch=5,
        partition_epoch=10,
        new_isr=(1, 3),
        change="shrink",
    )
    assert removed_at is not None
    assert LAG_MS < removed_at <= LAG_MS + 200


def test_shrink_never_removes_the_leader_and_never_empties_the_isr():
    """The leader is never a shrink candidate, so the ISR keeps at least the leader."""
    leader = make_leader(replicas=(1, 2, 3), log_end_offset=10, high_watermark=10)
    proposal = leader.check_isr_shrink(now_ms=10 * LAG_MS)
    assert proposal is not None and proposal.new_isr == (1,)
    leader.on_isr_change_committed(proposal.new_isr, 11, now_ms=10 * LAG_MS)
    assert leader.isr == (1,)
    assert leader.check_isr_shrink(now_ms=100 * LAG_MS) is None


def test_expansion_counts_in_the_maximal_isr_at_once():
    """KIP-497: a proposed addition holds the HW back before the controller commits it."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2), log_end_offset=10, high_watermark=10)
    outcome = fetch(leader, 3, 10, now_ms=100)
    assert outcome.propose_isr is not None and outcome.propose_isr.new_isr == (1, 2, 3)
    assert leader.isr == (1, 2)
    assert leader.maximal_isr == (1, 2, 3)
    leader.on_leader_append(20, now_ms=200)
    fetch(leader, 2, 20, now_ms=300)
    assert leader.high_watermark == 10  # broker 3 (LEO 10) is waited for already


def test_removal_counts_only_once_committed():
    """KIP-497: while a shrink is pending the removed follower still holds the HW back."""
    leader = make_leader(replicas=(1, 2, 3), log_end_offset=10, high_watermark=0)
    fetch(leader, 2, 10, now_ms=0)
    fetch(leader, 3, 4, now_ms=0)
    assert leader.high_watermark == 4
    proposal = leader.check_isr_shrink(now_ms=LAG_MS + 1)
    assert proposal is not None and proposal.new_isr == (1, 2)
    assert leader.maximal_isr == (1, 2, 3)
    fetch(leader, 2, 10, now_ms=LAG_MS + 2)
    assert leader.high_watermark == 4
    update = leader.on_isr_change_committed((1, 2), 11, now_ms=LAG_MS + 3)
    assert update is not None and update.new_high_watermark == 10
    assert leader.partition_epoch == 11


def test_expansion_needs_log_end_at_least_high_watermark_and_epoch_start():
    """maybeExpandIsr: follower LEO >= HW and >= start offset of the leader's epoch."""
    leader = make_leader(
        replicas=(1, 2, 3),
        isr=(1, 2),
        log_end_offset=30,
        high_watermark=20,
        leader_epoch_start_offset=25,
    )
    assert fetch(leader, 3, 19, now_ms=1).propose_isr is None  # below HW
    assert fetch(leader, 3, 24, now_ms=2).propose_isr is None  # below the epoch start
    assert fetch(leader, 3, 25, now_ms=3).propose_isr is not None


def test_only_one_isr_change_in_flight():
    """One change in flight per partition: no shrink or expansion while one is pending."""
    leader = make_leader(replicas=(1, 2, 3, 4), isr=(1, 2, 3), log_end_offset=5, high_watermark=5)
    assert fetch(leader, 4, 5, now_ms=0).propose_isr is not None
    assert leader.check_isr_shrink(now_ms=10 * LAG_MS) is None


def test_stale_isr_change_is_rejected_with_no_effect():
    """Scenario 19: a record with an old partition epoch is ignored; a failed CAS drops
    only the pending change it was for, and a dropped expansion releases the HW."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2), log_end_offset=10, high_watermark=10)
    proposal = fetch(leader, 3, 10, now_ms=0).propose_isr
    assert proposal is not None
    assert leader.on_isr_change_committed((1,), 10, now_ms=1) is None
    assert leader.isr == (1, 2) and leader.pending_isr_change is not None
    leader.on_leader_append(15, now_ms=2)
    fetch(leader, 2, 15, now_ms=3)
    assert leader.high_watermark == 10  # broker 3 counts while pending
    stale = ProposeIsr("orders", 0, 1, 5, 9, (1, 2, 3), "expand")
    assert leader.on_isr_change_rejected(stale, now_ms=4) is None
    assert leader.pending_isr_change is not None
    update = leader.on_isr_change_rejected(proposal, now_ms=LAG_MS + 100)
    assert update is not None and update.new_high_watermark == 15
    assert leader.maximal_isr == (1, 2) and leader.partition_epoch == 10


def test_high_watermark_waits_for_a_caught_up_replica_about_to_join():
    """maybeIncrementLeaderHW / shouldWaitForReplicaToJoinIsr: a follower outside the
    ISR that was caught up within the lag time also holds the HW back."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2), log_end_offset=10, high_watermark=10)
    proposal = fetch(leader, 3, 10, now_ms=0).propose_isr
    assert proposal is not None
    leader.on_isr_change_rejected(proposal, now_ms=1)
    leader.on_leader_append(15, now_ms=2)
    fetch(leader, 2, 15, now_ms=3)
    assert leader.high_watermark == 10
    update = leader.maybe_increment_high_watermark(now_ms=LAG_MS + 1)
    assert update is not None and update.new_high_watermark == 15
