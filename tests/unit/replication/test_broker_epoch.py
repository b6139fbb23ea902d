"""KIP-903 on the leader: the broker epoch a follower fetch carries, against the one the
leader recorded for that replica and the one registered in its metadata."""

from __future__ import annotations

from broker.errors import StaleBrokerEpoch
from broker.replication.broker_epoch import (
    UNKNOWN_BROKER_EPOCH,
    check_fetch_broker_epoch,
    is_isr_eligible,
    is_new_incarnation,
    stale_joiners,
)
from tests.unit.replication.factories import LAG_MS, fetch, make_leader


def test_the_rules_on_their_own():
    assert check_fetch_broker_epoch("t", 0, 2, 7, recorded_broker_epoch=7, registered_broker_epoch=7) is None
    assert check_fetch_broker_epoch("t", 0, 2, 9, recorded_broker_epoch=7, registered_broker_epoch=8) is None
    stale = check_fetch_broker_epoch("t", 0, 2, 7, recorded_broker_epoch=-1, registered_broker_epoch=8)
    assert isinstance(stale, StaleBrokerEpoch) and stale.retriable
    assert stale.details["expected_broker_epoch"] == 8
    assert isinstance(
        check_fetch_broker_epoch("t", 0, 2, 7, recorded_broker_epoch=9, registered_broker_epoch=8), StaleBrokerEpoch
    )
    assert is_new_incarnation(7, 9) and not is_new_incarnation(UNKNOWN_BROKER_EPOCH, 9) and not is_new_incarnation(9, 9)
    assert is_isr_eligible(9, 9)
    assert not is_isr_eligible(8, 9) and not is_isr_eligible(9, 8)
    assert not is_isr_eligible(UNKNOWN_BROKER_EPOCH, UNKNOWN_BROKER_EPOCH)


def test_a_delayed_fetch_from_a_dead_incarnation_never_brings_the_replica_back_into_the_isr():
    """Broker 3 restarted with an empty disk (registered again as 310) after it was removed
    from the ISR; a fetch its previous incarnation (300) sent at the leader's LEO arrives late.
    It is refused and recorded nowhere: neither the ISR nor the HW count it."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2), log_end_offset=50, high_watermark=40)
    outcome = fetch(leader, 3, 50, now_ms=1_000, broker_epoch=300, registered=310)
    assert isinstance(outcome.error, StaleBrokerEpoch)
    assert outcome.propose_isr is None and outcome.read_from_offset is None
    assert leader.follower(3).log_end_offset == -1
    assert leader.maximal_isr == (1, 2)

    catching_up = fetch(leader, 3, 0, now_ms=1_100, broker_epoch=310, registered=310)
    assert catching_up.error is None and catching_up.propose_isr is None
    caught_up = fetch(leader, 3, 50, now_ms=1_200, broker_epoch=310, registered=310)
    assert caught_up.propose_isr is not None and caught_up.propose_isr.new_isr == (1, 2, 3)


def test_a_fetch_from_a_newer_incarnation_forgets_what_the_previous_one_held():
    """Broker 2 (in the ISR, caught up) restarted with an empty disk; its first fetch (epoch
    210) comes before the leader's metadata shows the new registration. The replica's state
    starts afresh: LEO 0, never caught up — so the next shrink check removes it at once
    instead of trusting the previous incarnation's caught-up time for the lag time."""
    leader = make_leader(replicas=(1, 2, 3), log_end_offset=50, high_watermark=40)
    fetch(leader, 3, 50, now_ms=1_000)
    fetch(leader, 2, 50, now_ms=1_000, broker_epoch=200, registered=200)
    assert leader.high_watermark == 50
    assert leader.check_isr_shrink(now_ms=1_500) is None

    restarted = fetch(leader, 2, 0, now_ms=1_500, broker_epoch=210, registered=200)
    assert restarted.error is None
    state = leader.follower(2)
    assert (state.log_end_offset, state.broker_epoch, state.last_caught_up_time_ms) == (0, 210, None)
    shrink = leader.check_isr_shrink(now_ms=1_500)
    assert shrink is not None and shrink.new_isr == (1, 3)
    assert LAG_MS > 1_500 - 1_000, "without the reset, broker 2 would still count as caught up"

    late = fetch(leader, 2, 50, now_ms=1_600, broker_epoch=200, registered=200)
    assert isinstance(late.error, StaleBrokerEpoch), "the previous incarnation is gone"
    assert leader.follower(2).log_end_offset == 0


def test_a_replica_joins_only_once_the_leader_sees_its_incarnation_registered():
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2), log_end_offset=50, high_watermark=50)
    ahead_of_metadata = fetch(leader, 3, 50, now_ms=1_000, broker_epoch=320, registered=310)
    assert ahead_of_metadata.error is None and ahead_of_metadata.propose_isr is None
    unregistered = fetch(leader, 3, 50, now_ms=1_100, broker_epoch=320, registered=UNKNOWN_BROKER_EPOCH)
    assert unregistered.error is None and unregistered.propose_isr is None
    registered = fetch(leader, 3, 50, now_ms=1_200, broker_epoch=320, registered=320)
    assert registered.propose_isr is not None and registered.propose_isr.new_isr == (1, 2, 3)


def test_an_expansion_names_the_incarnation_that_qualified_each_joining_replica():
    """The ISR write checks these against the registrations in the store (AlterPartition's
    NewIsrWithEpochs), since the leader's own view may lag a restart."""
    leader = make_leader(replicas=(1, 2, 3), isr=(1, 2), log_end_offset=50, high_watermark=50)
    proposal = fetch(leader, 3, 50, now_ms=1_000, broker_epoch=320, registered=320).propose_isr
    assert proposal is not None and proposal.change == "expand"
    assert proposal.joining_broker_epochs == ((3, 320),)
    shrink = make_leader(replicas=(1, 2, 3), log_end_offset=50).check_isr_shrink(now_ms=LAG_MS + 1)
    assert shrink is not None and shrink.joining_broker_epochs == ()


def test_the_isr_write_refuses_a_joining_replica_whose_registration_moved_on():
    """Broker 3 restarted (registered again as 330) after the leader, whose view still showed
    320, qualified it on a fetch of incarnation 320; broker 2 is not registered at all."""
    assert stale_joiners(((3, 320),), {3: 320}) == []
    assert stale_joiners(((3, 320),), {3: 330}) == [3]
    assert stale_joiners(((2, 200), (3, 320)), {3: 320}) == [2]
    assert stale_joiners((), {}) == []
