"""Regression: once the controller removes a broker from the ISR (it died or is shutting
down), the high watermark stops waiting for it at once.

Found by the multi-broker integration tests: after a controlled shutdown, acks=all
produces on the partitions the stopped broker had followed hung for up to
``replica_lag_time_max_ms``, because the leader still counted it as a caught-up
replica about to join the ISR.
"""

from tests.unit.replication.factories import fetch, make_leader


def test_high_watermark_does_not_wait_for_a_broker_the_controller_removed():
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2, 3), min_insync_replicas=2, partition_epoch=10)
    fetch(leader, 2, 0, now_ms=10)
    fetch(leader, 3, 0, now_ms=10)
    assert leader.on_isr_change_committed((1, 3), 11, now_ms=20) is None  # broker 2 left

    leader.on_leader_append(5, now_ms=30)
    update = fetch(leader, 3, 5, now_ms=40).hw_update
    assert update is not None and update.new_high_watermark == 5
    assert leader.high_watermark == 5


def test_a_removed_broker_that_fetches_again_counts_again():
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2, 3), min_insync_replicas=2, partition_epoch=10)
    leader.on_isr_change_committed((1, 3), 11, now_ms=20)
    leader.on_leader_append(5, now_ms=30)
    outcome = fetch(leader, 2, 5, now_ms=35)
    assert outcome.propose_isr is not None and outcome.propose_isr.new_isr == (1, 2, 3)
    assert leader.follower(2).log_end_offset == 5
