"""``PartitionReplica``: the one decision core both drivers run, event in, ``Ready`` out.

Pure: a real epoch cache, no files, no loop, no clock (time is ``now_ms``).
"""

from __future__ import annotations

from broker.cluster.records import PartitionRecord
from broker.errors import FencedLeaderEpoch, NotEnoughReplicas, NotLeaderOrFollower, RequestTimedOut, StaleBrokerEpoch
from broker.replication import (
    NOTHING,
    AppendRecords,
    AwaitLeaderChange,
    FetchRequestFields,
    LocalLogView,
    PartitionFetchResponse,
    PartitionReplica,
    UpdateFollowerOffsets,
)
from broker.replication.isr_change import IsrChangeRefused
from broker.storage.epoch_cache import LeaderEpochCache

TOPIC = "orders"
LAG_MS = 1_000


def _record(leader: int, leader_epoch: int, partition_epoch: int, isr=(1, 2, 3)) -> PartitionRecord:
    return PartitionRecord(
        topic=TOPIC,
        partition=0,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        replicas=[1, 2, 3],
        isr=list(isr),
    )


class _Log:
    """A log as a driver reports it: offsets plus the real epoch cache."""

    def __init__(self, log_end_offset: int = 0) -> None:
        self.log_start_offset = 0
        self.log_end_offset = log_end_offset
        self.epoch_cache = LeaderEpochCache()
        self.recovery_point = log_end_offset

    def view(self) -> LocalLogView:
        return LocalLogView(self.log_start_offset, self.log_end_offset, self.epoch_cache, self.recovery_point)


def _replica(broker_id: int = 1, *, fsync: bool = True, high_watermark: int = 0, log: _Log | None = None):
    log = log or _Log()
    replica = PartitionReplica(
        TOPIC,
        0,
        local_broker_id=broker_id,
        replica_lag_time_max_ms=LAG_MS,
        fsync_before_acknowledging=fsync,
        high_watermark=high_watermark,
        log_view=log.view(),
    )
    return replica, log


def _lead(replica: PartitionReplica, log: _Log, *, leader_epoch: int = 5, isr=(1, 2, 3), now_ms: int = 0):
    ready = replica.apply_record(_record(1, leader_epoch, 10, isr), 2, log.view(), now_ms)
    if ready.assign_epoch is not None:
        log.epoch_cache.assign(*ready.assign_epoch)
    return ready


def _follower_fetch(replica: PartitionReplica, log: _Log, follower: int, offset: int, now_ms: int):
    fields = FetchRequestFields(
        replica_id=follower,
        fetch_offset=offset,
        last_fetched_epoch=log.epoch_cache.latest_epoch,
        current_leader_epoch=replica.leader_epoch,
        log_start_offset=0,
    )
    return replica.on_follower_fetch(
        fields, broker_epoch=7, registered_broker_epoch=7, log_view=log.view(), now_ms=now_ms
    )


def test_a_leader_record_asks_to_assign_the_epoch_at_the_log_end_first():
    replica, log = _replica(log=_Log(log_end_offset=12))
    ready = _lead(replica, log)
    assert replica.is_leader
    assert ready.assign_epoch == (5, 12)
    assert ready.role_changed and ready.high_watermark_moved
    assert replica.apply_record(_record(2, 4, 11), 2, log.view(), 1) is NOTHING, "an older leader epoch is ignored"
    assert replica.is_leader


def test_a_new_leader_answers_latest_only_once_its_hw_reaches_its_epoch_start():
    """KIP-207: promoted with the HW it had as a follower (4, behind its log end 9), it may lie
    below what the previous leader exposed, so "latest" waits until the followers carry it
    to the epoch's start; a follower never answers it."""
    replica, log = _replica(high_watermark=4, log=_Log(log_end_offset=9))
    assert not replica.latest_offset_available
    _lead(replica, log)
    assert (replica.high_watermark, replica.latest_offset_available) == (4, False)
    _follower_fetch(replica, log, 2, 9, now_ms=10)
    assert not replica.latest_offset_available, "broker 3 is in the ISR and still below"
    _follower_fetch(replica, log, 3, 9, now_ms=20)
    assert (replica.high_watermark, replica.latest_offset_available) == (9, True)


def test_an_acks_all_produce_is_answered_when_the_followers_fetch_past_it():
    replica, log = _replica()
    _lead(replica, log)
    assert replica.admit_produce(acks_all=True) is None
    log.log_end_offset = 3
    appended = replica.on_appended(5, 3, now_ms=10, acks_all=True)
    assert appended.completions == () and appended.flush_before_acknowledging
    assert replica.on_flushed(3, now_ms=15) is NOTHING, "the driver reports the acks=all fsync"
    waiting = replica.await_replication("p1", required_offset=3, deadline_ms=1_000)
    assert waiting.completions == () and waiting.next_deadline_ms == 1_000
    _, ready = _follower_fetch(replica, log, 2, 3, now_ms=20)
    assert ready.completions == (), "min ISR 2 is held, but broker 3 is in the ISR and still below"
    _, ready = _follower_fetch(replica, log, 3, 3, now_ms=30)
    assert [(c.request_id, c.error) for c in ready.completions] == [("p1", None)]
    assert ready.high_watermark_moved and replica.high_watermark == 3


def test_a_waiting_produce_expires_at_its_deadline_on_tick():
    replica, log = _replica()
    _lead(replica, log)
    log.log_end_offset = 1
    replica.on_appended(5, 1, now_ms=0)
    replica.await_replication("p1", required_offset=1, deadline_ms=500)
    assert replica.tick(499).completions == ()
    [completion] = replica.tick(500).completions
    assert completion.request_id == "p1" and isinstance(completion.error, RequestTimedOut)


def test_losing_leadership_fails_every_waiting_produce_and_drops_the_isr_change_in_flight():
    replica, log = _replica()
    _lead(replica, log)
    log.log_end_offset = 2
    replica.on_appended(5, 2, now_ms=0)
    replica.await_replication("p1", required_offset=2, deadline_ms=5_000)
    replica.tick(LAG_MS * 2)
    assert replica.isr_in_flight is not None, "both followers lag: a shrink is proposed"
    ready = replica.apply_record(_record(2, 6, 12), 2, log.view(), LAG_MS * 2)
    assert not replica.is_leader and replica.follower_state is not None
    [completion] = ready.completions
    assert isinstance(completion.error, NotLeaderOrFollower) and completion.error.details["leader_id"] == 2
    assert replica.isr_in_flight is None and ready.role_changed


def test_acks_all_is_refused_below_min_isr_and_nothing_is_refused_to_a_follower_but_leadership():
    replica, log = _replica()
    _lead(replica, log, isr=(1,))
    assert isinstance(replica.admit_produce(acks_all=True), NotEnoughReplicas)
    assert replica.admit_produce(acks_all=False) is None
    follower, _ = _replica(broker_id=2)
    follower.apply_record(_record(1, 5, 10), 2, _Log().view(), 0)
    assert isinstance(follower.admit_produce(acks_all=False), NotLeaderOrFollower)


def test_an_append_that_outlived_its_leader_epoch_moves_nothing():
    replica, log = _replica()
    replica.apply_record(_record(1, 5, 10, isr=(1,)), 1, log.view(), 0)
    replica.apply_record(_record(1, 6, 11, isr=(1,)), 1, log.view(), 0)
    log.log_end_offset = 4
    assert replica.on_appended(5, 4, now_ms=1) is NOTHING
    assert replica.high_watermark == 0
    appended = replica.on_appended(6, 4, now_ms=1)
    assert appended.start_flush and not appended.high_watermark_moved, "alone in the ISR: only its fsync is missing"
    assert replica.on_flushed(4, now_ms=2).high_watermark_moved
    assert replica.high_watermark == 4


def test_the_isr_shrink_check_runs_every_half_lag_time_and_one_change_at_a_time():
    replica, log = _replica()
    _lead(replica, log, now_ms=0)
    log.log_end_offset = 1
    replica.on_appended(5, 1, now_ms=0)
    assert replica.tick(LAG_MS // 2 - 1).propose_isr is None, "not due yet"
    assert replica.tick(LAG_MS + 1).propose_isr is not None
    assert replica.tick(LAG_MS * 3).propose_isr is None, "a change is already in flight"
    proposal = replica.isr_in_flight
    assert proposal is not None and proposal.new_isr == (1,)
    replica.on_isr_result(proposal, IsrChangeRefused("broker 2 is not registered", record_moved=False), LAG_MS * 3)
    assert replica.isr_in_flight is None
    assert replica.tick(LAG_MS * 4).propose_isr is not None, "refused: proposed again at the next check"


def test_a_fetch_to_a_replica_that_does_not_lead_is_refused_with_its_offsets():
    replica, log = _replica(broker_id=2, high_watermark=3, log=_Log(log_end_offset=5))
    replica.apply_record(_record(1, 5, 10), 2, log.view(), 0)
    outcome, ready = _follower_fetch(replica, log, 3, 0, now_ms=0)
    assert isinstance(outcome.error, NotLeaderOrFollower)
    assert (outcome.high_watermark, outcome.log_end_offset) == (3, 5)
    assert ready is NOTHING


def test_a_stale_incarnation_fetch_is_refused_without_touching_state():
    replica, log = _replica()
    _lead(replica, log)
    fields = FetchRequestFields(
        replica_id=2, fetch_offset=0, last_fetched_epoch=5, current_leader_epoch=5, log_start_offset=0
    )
    outcome, _ = replica.on_follower_fetch(
        fields, broker_epoch=3, registered_broker_epoch=9, log_view=log.view(), now_ms=0
    )
    assert isinstance(outcome.error, StaleBrokerEpoch)
    assert replica.leader_state is not None and replica.leader_state.follower(2).log_end_offset == -1


def test_a_follower_appends_what_it_fetched_and_flushes_only_under_fsync():
    for fsync in (True, False):
        replica, log = _replica(broker_id=2, fsync=fsync)
        replica.apply_record(_record(1, 5, 10), 2, log.view(), 0)
        sent = replica.fetch_request(log.view())
        assert sent is not None and sent.fetch_offset == 0 and sent.current_leader_epoch == 5
        response = PartitionFetchResponse(high_watermark=2, log_start_offset=0, log_end_offset=3, records_last_offset=2)
        ready = replica.on_fetch_response(sent, response, log.view())
        assert [type(action) for action in ready.log_actions] == [AppendRecords, UpdateFollowerOffsets]
        assert ready.flush is fsync


def test_under_fsync_a_leader_asks_for_one_flush_when_only_its_own_tail_holds_the_hw_back():
    """acks=1 appends are not fsynced on the way; once every follower holds them, the
    HW waits for the leader's fsync alone, which the core asks for, once."""
    replica, log = _replica()
    _lead(replica, log)
    log.log_end_offset = 3
    appended = replica.on_appended(5, 3, now_ms=10)
    assert not appended.start_flush, "no follower holds them yet"
    assert not appended.flush_before_acknowledging, "an acks=1 answer waits for no fsync"
    waiting = replica.await_replication("p1", required_offset=3, deadline_ms=1_000)
    assert waiting.completions == ()
    _, ready = _follower_fetch(replica, log, 2, 3, now_ms=20)
    assert not ready.start_flush, "broker 3 still holds the HW back"
    _, ready = _follower_fetch(replica, log, 3, 3, now_ms=30)
    assert ready.start_flush and ready.completions == ()
    assert replica.high_watermark == 0, "the followers hold 3 offsets, the leader's disk none"
    _, again = _follower_fetch(replica, log, 2, 3, now_ms=35)
    assert not again.start_flush, "one fsync at a time"
    log.log_end_offset = 5
    assert not replica.on_appended(5, 5, now_ms=38).start_flush
    flushed = replica.on_flushed(3, now_ms=40)
    assert [(c.request_id, c.error) for c in flushed.completions] == [("p1", None)]
    assert flushed.high_watermark_moved and replica.high_watermark == 3
    assert not flushed.start_flush, "no follower holds offsets 3 and 4 yet"
    _follower_fetch(replica, log, 2, 5, now_ms=45)
    _, ready = _follower_fetch(replica, log, 3, 5, now_ms=50)
    assert ready.start_flush and replica.high_watermark == 3


def test_no_flush_is_asked_for_while_an_acks_all_producers_fsync_is_in_flight():
    """That fsync raises the flushed offset soon; another one queued behind it would
    only delay the producers waiting for the next group commit."""
    replica, log = _replica()
    _lead(replica, log)
    log.log_end_offset = 3
    assert replica.on_appended(5, 3, now_ms=10, acks_all=True).flush_before_acknowledging
    _follower_fetch(replica, log, 2, 3, now_ms=20)
    _, ready = _follower_fetch(replica, log, 3, 3, now_ms=30)
    assert not ready.start_flush and replica.high_watermark == 0
    log.log_end_offset = 5
    replica.on_appended(5, 5, now_ms=35)
    _follower_fetch(replica, log, 2, 5, now_ms=40)
    _follower_fetch(replica, log, 3, 5, now_ms=45)
    flushed = replica.on_flushed(3, now_ms=50)
    assert flushed.high_watermark_moved and replica.high_watermark == 3
    assert flushed.start_flush, "offsets 3 and 4 are on every follower, not on the leader's disk"


def test_without_fsync_the_leader_hw_counts_its_log_end_and_asks_for_no_flush():
    replica, log = _replica(fsync=False)
    _lead(replica, log)
    log.log_end_offset = 3
    replica.on_appended(5, 3, now_ms=10)
    _follower_fetch(replica, log, 2, 3, now_ms=20)
    _, ready = _follower_fetch(replica, log, 3, 3, now_ms=30)
    assert not ready.start_flush and replica.high_watermark == 3


def test_a_replica_fsyncs_an_unflushed_tail_before_fetching_only_under_fsync():
    """The fetch offset is the LEO, which the leader counts as held here: a tail appended
    while this replica led and never fsynced must be made durable first."""
    for fsync in (True, False):
        replica, log = _replica(broker_id=2, fsync=fsync, log=_Log(log_end_offset=7))
        log.recovery_point = 4
        replica.apply_record(_record(1, 5, 10), 2, log.view(), 0)
        assert replica.must_flush_before_fetching(log.view()) is fsync
        log.recovery_point = 7
        assert not replica.must_flush_before_fetching(log.view())


def test_an_answer_to_a_fetch_from_another_epoch_or_log_end_is_dropped():
    replica, log = _replica(broker_id=2)
    replica.apply_record(_record(1, 5, 10), 2, log.view(), 0)
    sent = replica.fetch_request(log.view())
    assert sent is not None
    response = PartitionFetchResponse(high_watermark=0, log_start_offset=0, log_end_offset=3, records_last_offset=2)
    log.log_end_offset = 1
    assert replica.on_fetch_response(sent, response, log.view()) is NOTHING
    log.log_end_offset = 0
    replica.apply_record(_record(1, 6, 11), 2, log.view(), 0)
    assert replica.on_fetch_response(sent, response, log.view()) is NOTHING


def test_a_fenced_follower_stops_fetching_until_a_newer_record():
    replica, log = _replica(broker_id=2)
    replica.apply_record(_record(1, 5, 10), 2, log.view(), 0)
    sent = replica.fetch_request(log.view())
    assert sent is not None
    fenced = PartitionFetchResponse(
        high_watermark=0, log_start_offset=0, log_end_offset=0, error=FencedLeaderEpoch("epoch 5 is stale")
    )
    ready = replica.on_fetch_response(sent, fenced, log.view())
    assert any(isinstance(action, AwaitLeaderChange) for action in ready.log_actions)
    assert replica.fetch_request(log.view()) is None
    assert replica.apply_record(_record(1, 5, 10), 2, log.view(), 0) is NOTHING
    assert replica.fetch_request(log.view()) is None, "the same record again does not end the wait"
    replica.apply_record(_record(3, 6, 11), 2, log.view(), 0)
    refreshed = replica.fetch_request(log.view())
    assert refreshed is not None and refreshed.current_leader_epoch == 6


def test_lowering_min_isr_lets_a_held_hw_rise_and_answers_the_waiting_produce():
    """KIP-966 holds the HW while the ISR is below min ISR; an alter to a lower value
    releases it at once, and raising it again holds the next rise."""
    replica, log = _replica(fsync=False)
    replica.apply_record(_record(1, 5, 10, isr=(1, 2)), 3, log.view(), 0)
    log.log_end_offset = 2
    replica.on_appended(5, 2, now_ms=1)
    replica.await_replication("p1", required_offset=2, deadline_ms=5_000)
    _, ready = _follower_fetch(replica, log, 2, 2, now_ms=2)
    assert replica.high_watermark == 0 and ready.completions == (), "ISR 2 is below min ISR 3"
    lowered = replica.apply_topic_config(2, False, log.view(), now_ms=3)
    assert lowered.high_watermark_moved and replica.high_watermark == 2
    assert [(c.request_id, c.error) for c in lowered.completions] == [("p1", None)]
    raised = replica.apply_topic_config(3, False, log.view(), now_ms=4)
    assert raised is not NOTHING and not raised.high_watermark_moved
    assert isinstance(replica.admit_produce(acks_all=True), NotEnoughReplicas)
    log.log_end_offset = 4
    replica.on_appended(5, 4, now_ms=5)
    _follower_fetch(replica, log, 2, 4, now_ms=6)
    assert replica.high_watermark == 2, "min ISR 3 holds the HW again"


def test_raising_min_isr_above_the_isr_holds_a_waiting_acks_all_until_its_deadline():
    """KIP-966: under min ISR the HW does not move, so a write the alter caught waiting is
    never acknowledged with fewer in-sync replicas than now asked for."""
    replica, log = _replica(fsync=False)
    replica.apply_record(_record(1, 5, 10, isr=(1, 2)), 2, log.view(), 0)
    log.log_end_offset = 1
    replica.on_appended(5, 1, now_ms=1)
    replica.await_replication("p1", required_offset=1, deadline_ms=5_000)
    state = replica.leader_state
    assert state is not None
    replica.apply_topic_config(1, False, log.view(), now_ms=2)
    assert replica.high_watermark == 0, "broker 2 is in the ISR and holds nothing yet"
    replica.apply_topic_config(3, False, log.view(), now_ms=3)
    assert state.effective_min_isr == 3
    _, ready = _follower_fetch(replica, log, 2, 1, now_ms=4)
    assert replica.high_watermark == 0 and ready.completions == (), "under min ISR the HW does not move"
    [completion] = replica.tick(5_000).completions
    assert completion.request_id == "p1" and isinstance(completion.error, RequestTimedOut)


def test_switching_to_fsync_holds_later_rises_until_the_leaders_own_flush():
    replica, log = _replica(fsync=False)
    _lead(replica, log)
    log.log_end_offset = 3
    log.recovery_point = 1
    replica.on_appended(5, 3, now_ms=1)
    _follower_fetch(replica, log, 2, 3, now_ms=2)
    _follower_fetch(replica, log, 3, 3, now_ms=3)
    assert replica.high_watermark == 3, "the os policy counts the leader's LEO"
    log.log_end_offset = 6
    replica.on_appended(5, 6, now_ms=4)
    switched = replica.apply_topic_config(2, True, log.view(), now_ms=5)
    assert not switched.start_flush and not switched.high_watermark_moved, "no follower holds offsets 3..5 yet"
    _follower_fetch(replica, log, 2, 6, now_ms=6)
    _, ready = _follower_fetch(replica, log, 3, 6, now_ms=7)
    assert ready.start_flush and replica.high_watermark == 3, "only the leader's unflushed tail holds it back"
    _, again = _follower_fetch(replica, log, 2, 6, now_ms=8)
    assert not again.start_flush, "one flush at a time"
    flushed = replica.on_flushed(6, now_ms=9)
    assert flushed.high_watermark_moved and replica.high_watermark == 6
    log.log_end_offset = 7
    assert replica.on_appended(5, 7, now_ms=10, acks_all=True).flush_before_acknowledging, (
        "fsync before an acks=all answer"
    )


def test_switching_away_from_fsync_lets_the_hw_count_the_leaders_log_end():
    replica, log = _replica(fsync=True)
    _lead(replica, log)
    log.log_end_offset = 3
    assert replica.on_appended(5, 3, now_ms=1, acks_all=True).flush_before_acknowledging
    _follower_fetch(replica, log, 2, 3, now_ms=2)
    _follower_fetch(replica, log, 3, 3, now_ms=3)
    assert replica.high_watermark == 0
    released = replica.apply_topic_config(2, False, log.view(), now_ms=4)
    assert released.high_watermark_moved and replica.high_watermark == 3
    log.log_end_offset = 4
    assert not replica.on_appended(5, 4, now_ms=5, acks_all=True).flush_before_acknowledging


def test_a_follower_takes_the_flush_policy_for_its_next_fetch_only():
    replica, log = _replica(broker_id=2, fsync=False, log=_Log(log_end_offset=4))
    log.recovery_point = 2
    replica.apply_record(_record(1, 5, 10), 2, log.view(), 0)
    assert not replica.must_flush_before_fetching(log.view())
    assert replica.apply_topic_config(2, True, log.view(), now_ms=1) is NOTHING
    assert replica.must_flush_before_fetching(log.view())


def _lead_with_broker_3_joining(replica: PartitionReplica, log: _Log):
    """Leader of ISR (1, 2) at HW 4; broker 3 catches up and its expansion is proposed."""
    _lead(replica, log, isr=(1, 2))
    log.log_end_offset = 4
    replica.on_appended(5, 4, now_ms=1)
    replica.on_flushed(4, now_ms=1)
    _follower_fetch(replica, log, 2, 4, now_ms=2)
    _, ready = _follower_fetch(replica, log, 3, 4, now_ms=3)
    assert replica.high_watermark == 4 and ready.propose_isr is not None
    log.log_end_offset = 8
    replica.on_appended(5, 8, now_ms=4)
    replica.on_flushed(8, now_ms=4)
    _follower_fetch(replica, log, 2, 8, now_ms=5)
    return ready.propose_isr


def test_an_expansion_refused_because_the_record_moved_on_keeps_counting_the_joiner_until_the_newer_record():
    """The change may have been taken by an attempt whose answer was lost: the HW keeps
    waiting for broker 3 (the controller may hold it in the ISR and elect it) until the
    newer record says what the ISR is. Dropping it here lost acknowledged records in the
    seeded simulation (seed 3374827296)."""
    replica, log = _replica()
    proposal = _lead_with_broker_3_joining(replica, log)
    moved = IsrChangeRefused("the record changed under the compare-and-set", record_moved=True)
    assert replica.on_isr_result(proposal, moved, now_ms=6) is NOTHING
    assert replica.high_watermark == 4, "broker 3 (at 4) still counts"
    replica.apply_record(_record(1, 5, 11, isr=(1, 2, 3)), 2, log.view(), 7)
    assert replica.leader_state is not None and replica.leader_state.isr == (1, 2, 3)
    assert replica.high_watermark == 4
    _follower_fetch(replica, log, 3, 8, now_ms=8)
    assert replica.high_watermark == 8


def test_an_expansion_refused_on_the_record_it_was_based_on_is_dropped():
    replica, log = _replica()
    proposal = _lead_with_broker_3_joining(replica, log)
    refused = IsrChangeRefused("new ISR members [3] are not registered", record_moved=False)
    assert replica.on_isr_result(proposal, refused, now_ms=LAG_MS * 2).high_watermark_moved
    assert replica.high_watermark == 8, "broker 3 no longer holds the HW back"
