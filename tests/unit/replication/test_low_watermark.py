"""The leader's low watermark (DeleteRecords' answer): the smallest log start among it and its in-sync followers."""

from __future__ import annotations

from tests.unit.replication.factories import fetch, make_leader


def test_the_low_watermark_waits_for_every_in_sync_follower_to_report_its_log_start() -> None:
    leader = make_leader(log_end_offset=20, high_watermark=20)
    assert leader.low_watermark() == -1, "no follower has fetched in this epoch: unknown"
    fetch(leader, 2, 20, 1, log_start_offset=0)
    fetch(leader, 3, 20, 1, log_start_offset=0)
    assert leader.low_watermark() == 0
    leader.advance_log_start_offset(12)
    assert leader.log_start_offset == 12 and leader.low_watermark() == 0, "the followers still hold 0-11"
    fetch(leader, 2, 20, 2, log_start_offset=12)
    assert leader.low_watermark() == 0
    fetch(leader, 3, 20, 2, log_start_offset=12)
    assert leader.low_watermark() == 12


def test_a_fetch_that_does_not_say_its_log_start_keeps_the_last_one_said() -> None:
    leader = make_leader(log_end_offset=5, high_watermark=5)
    fetch(leader, 2, 5, 1, log_start_offset=3)
    fetch(leader, 3, 5, 1, log_start_offset=4)
    leader.advance_log_start_offset(4)
    fetch(leader, 2, 5, 2)
    assert leader.follower(2).log_start_offset == 3 and leader.low_watermark() == 3


def test_a_follower_out_of_the_isr_does_not_hold_the_low_watermark() -> None:
    leader = make_leader(log_end_offset=10, high_watermark=10, isr=(1, 2))
    fetch(leader, 2, 10, 1, log_start_offset=10)
    leader.advance_log_start_offset(10)
    assert leader.low_watermark() == 10
    fetch(leader, 3, 4, 1, log_start_offset=0)
    assert leader.low_watermark() == 10, "broker 3 is not in sync: what it still holds is not counted"


def test_a_new_incarnation_of_a_follower_forgets_what_the_old_one_said() -> None:
    leader = make_leader(log_end_offset=10, high_watermark=10)
    fetch(leader, 2, 10, 1, log_start_offset=6)
    fetch(leader, 3, 10, 1, log_start_offset=6)
    leader.advance_log_start_offset(6)
    assert leader.low_watermark() == 6
    state = leader.follower(2)
    state.on_fetch(10, 10, 2, state.broker_epoch + 1)
    assert state.log_start_offset == -1 and leader.low_watermark() == -1
