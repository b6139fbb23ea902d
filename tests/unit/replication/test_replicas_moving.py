"""A leader whose replicas move (a reassignment) in its own leader epoch.

A replica the move adds starts as one that never fetched: it joins the ISR only once
caught up, and until then acks=all does not wait for it; a replica the move removes is
forgotten, and a fetch from it is refused like any non-replica's.
"""

import pytest

from tests.unit.replication.factories import fetch, make_leader


def test_an_added_replica_joins_the_isr_only_once_caught_up_and_is_not_waited_for_before():
    leader = make_leader(replicas=(1, 2), isr=(1, 2), min_insync_replicas=2, partition_epoch=10)
    leader.on_leader_append(8, now_ms=1)
    fetch(leader, 2, 8, now_ms=2)
    assert leader.high_watermark == 8
    leader.on_replicas_changed((3, 2, 1))
    leader.on_isr_change_committed((1, 2), 11, now_ms=3)
    assert leader.follower(3).log_end_offset == -1

    leader.on_leader_append(10, now_ms=4)
    assert fetch(leader, 2, 10, now_ms=5).hw_update is not None
    assert leader.high_watermark == 10, "the new replica is outside the ISR: the HW does not wait for it"

    assert fetch(leader, 3, 4, now_ms=6).propose_isr is None, "not caught up yet"
    joining = fetch(leader, 3, 10, now_ms=7).propose_isr
    assert joining is not None and set(joining.new_isr) == {1, 2, 3}


def test_a_removed_replica_is_forgotten_and_its_fetch_refused():
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2, 3), partition_epoch=10)
    leader.on_replicas_changed((1, 2))
    leader.on_isr_change_committed((1, 2), 11, now_ms=3)
    assert leader.replicas == (1, 2)
    refused = fetch(leader, 3, 0, now_ms=4).error
    assert refused is not None and "broker 3 is not a follower replica of orders-0 (replicas [1, 2])" in refused.message


def test_a_move_that_leaves_out_the_leader_itself_is_refused():
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2, 3))
    with pytest.raises(ValueError, match="leader 1 is not a replica"):
        leader.on_replicas_changed((2, 3, 4))
