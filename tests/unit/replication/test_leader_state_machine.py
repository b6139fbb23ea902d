"""Property test: a leader with 2-4 followers under random appends, fetches, time,
ISR shrink checks, ISR commits/rejections, retention and acks=all produces.

The physical model behind the generated fetches: a follower fetches at any offset up
to the leader's LEO, except that a member of the maximal ISR holds everything below
the HW (it joined with LEO >= HW and clean replication never cuts below it), so its
fetch offset is >= HW. Losing committed data from an ISR member is the unclean case
the invariants below do not cover.

Invariants (REPLICATION-REFERENCE "Invariants to assert" 2-5):
- the HW never decreases;
- HW <= leader LEO and <= the LEO of every maximal-ISR member whose LEO is known;
  while one is unknown (not fetched since the leader change) the HW has not moved;
- the leader is in the ISR; the ISR is a non-empty subset of the replicas;
- log_start_offset <= HW <= LEO;
- the HW does not move while the committed ISR is below min ISR;
- an acks=all success only when HW >= its required offset with maximal ISR >= min ISR.
"""

from __future__ import annotations

from collections.abc import Hashable

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from broker.replication import (
    DelayedProducePurgatory,
    HwUpdate,
    PartitionLeaderState,
    ProposeIsr,
)
from broker.storage.epoch_cache import EpochEntry, LeaderEpochCache
from tests.unit.replication.factories import current_incarnation

LEADER_ID = 1
LEADER_EPOCH = 7
LAG_MS = 10_000
PRODUCE_TIMEOUT_MS = 30_000


class LeaderStateMachine(RuleBasedStateMachine):
    @initialize(data=st.data())
    def become_leader(self, data: st.DataObject) -> None:
        followers = data.draw(st.integers(2, 4), label="followers")
        self.replicas = tuple(range(LEADER_ID, LEADER_ID + followers + 1))
        in_sync = data.draw(st.sets(st.sampled_from(self.replicas[1:])), label="isr followers")
        isr = tuple(b for b in self.replicas if b == LEADER_ID or b in in_sync)
        log_end_offset = data.draw(st.integers(0, 30), label="leo")
        high_watermark = data.draw(st.integers(0, log_end_offset), label="hw")
        log_start_offset = data.draw(st.integers(0, high_watermark), label="log start")
        self.now_ms = data.draw(st.integers(0, 10**9), label="now")
        self.leader = PartitionLeaderState(
            topic="t",
            partition=0,
            local_broker_id=LEADER_ID,
            leader_epoch=LEADER_EPOCH,
            partition_epoch=3,
            replicas=self.replicas,
            isr=isr,
            min_insync_replicas=data.draw(st.integers(1, 3), label="min isr"),
            log_start_offset=log_start_offset,
            log_end_offset=log_end_offset,
            high_watermark=high_watermark,
            leader_epoch_start_offset=log_end_offset,
            replica_lag_time_max_ms=LAG_MS,
            now_ms=self.now_ms,
        )
        self.cache = LeaderEpochCache([EpochEntry(LEADER_EPOCH, log_end_offset)])
        self.purgatory = DelayedProducePurgatory("t", 0)
        self.required_offsets: dict[Hashable, int] = {}
        self.next_request_id = 0
        self.proposal: ProposeIsr | None = None
        self.hw_at_leader_start = self.leader.high_watermark
        self.previous_hw = self.leader.high_watermark
        self.hw_before_step = self.leader.high_watermark

    # ---------------------------------------------------------------- helpers

    def _begin_step(self) -> None:
        self.hw_before_step = self.leader.high_watermark

    def _after_hw_update(self, update: HwUpdate | None) -> None:
        if update is None:
            return
        assert update.old_high_watermark == self.hw_before_step
        assert update.new_high_watermark == self.leader.high_watermark
        assert update.new_high_watermark > update.old_high_watermark
        self._complete_produces()

    def _complete_produces(self) -> None:
        maximal = len(self.leader.maximal_isr)
        min_isr = self.leader.effective_min_isr
        for request_id, error in self.purgatory.on_high_watermark(self.leader.high_watermark, maximal, min_isr):
            assert self.leader.high_watermark >= self.required_offsets.pop(request_id)
            if error is None:
                assert maximal >= min_isr

    def _remember(self, proposal: ProposeIsr | None) -> None:
        if proposal is None:
            return
        assert LEADER_ID in proposal.new_isr
        assert set(proposal.new_isr) <= set(self.replicas)
        assert proposal.partition_epoch == self.leader.partition_epoch
        self.proposal = proposal

    # ------------------------------------------------------------------ rules

    @rule(records=st.integers(0, 5))
    def leader_append(self, records: int) -> None:
        self._begin_step()
        new_leo = self.leader.log_end_offset + records
        self._after_hw_update(self.leader.on_leader_append(new_leo, self.now_ms))

    @rule(records=st.integers(1, 5))
    def produce_acks_all(self, records: int) -> None:
        self._begin_step()
        refusal = self.leader.check_produce_admission()
        if refusal is not None:
            assert len(self.leader.isr) < self.leader.effective_min_isr
            return
        new_leo = self.leader.log_end_offset + records
        update = self.leader.on_leader_append(new_leo, self.now_ms)
        self.next_request_id += 1
        self.required_offsets[self.next_request_id] = new_leo
        self.purgatory.add(self.next_request_id, new_leo, self.now_ms + PRODUCE_TIMEOUT_MS)
        self._after_hw_update(update)
        self._complete_produces()

    @rule(data=st.data())
    def follower_fetch(self, data: st.DataObject) -> None:
        self._begin_step()
        replica_id = data.draw(st.sampled_from(self.replicas[1:]), label="follower")
        lowest = self.leader.high_watermark if replica_id in self.leader.maximal_isr else self.leader.log_start_offset
        offset = data.draw(st.integers(lowest, self.leader.log_end_offset), label="offset")
        outcome = self.leader.on_follower_fetch(
            replica_id,
            offset,
            self.now_ms,
            last_fetched_epoch=LEADER_EPOCH,
            current_leader_epoch=LEADER_EPOCH,
            epoch_cache=self.cache,
            **current_incarnation(replica_id),
        )
        assert outcome.error is None and outcome.diverging_epoch is None
        assert outcome.high_watermark == self.hw_before_step
        assert outcome.read_from_offset == offset
        assert self.leader.follower(replica_id).log_end_offset == offset
        self._remember(outcome.propose_isr)
        self._after_hw_update(outcome.hw_update)

    @rule(elapsed_ms=st.integers(0, 2 * LAG_MS))
    def advance_time(self, elapsed_ms: int) -> None:
        self._begin_step()
        self.now_ms += elapsed_ms
        for request_id, error in self.purgatory.expire(self.now_ms):
            assert error is not None
            self.required_offsets.pop(request_id)

    @rule()
    def isr_shrink_check(self) -> None:
        self._begin_step()
        pending_before = self.leader.pending_isr_change
        proposal = self.leader.check_isr_shrink(self.now_ms)
        if proposal is None:
            return
        assert pending_before is None
        assert set(proposal.new_isr) < set(self.leader.isr)
        assert self.leader.maximal_isr == self.leader.isr  # a removal does not count yet
        self._remember(proposal)

    @precondition(lambda self: self.leader.pending_isr_change is not None)
    @rule()
    def controller_commits_pending_change(self) -> None:
        self._begin_step()
        pending = self.leader.pending_isr_change
        assert pending is not None
        new_epoch = self.leader.partition_epoch + 1
        update = self.leader.on_isr_change_committed(
            tuple(b for b in self.replicas if b in pending.new_isr),
            new_epoch,
            self.now_ms,
        )
        assert set(self.leader.isr) == pending.new_isr
        assert self.leader.partition_epoch == new_epoch
        assert self.leader.pending_isr_change is None
        self.proposal = None
        self._after_hw_update(update)
        self._complete_produces()

    @precondition(lambda self: self.leader.pending_isr_change is not None)
    @rule()
    def controller_rejects_pending_change(self) -> None:
        self._begin_step()
        assert self.proposal is not None
        isr_before, epoch_before = self.leader.isr, self.leader.partition_epoch
        update = self.leader.on_isr_change_rejected(self.proposal, self.now_ms)
        assert self.leader.pending_isr_change is None
        assert (self.leader.isr, self.leader.partition_epoch) == (
            isr_before,
            epoch_before,
        )
        self.proposal = None
        self._after_hw_update(update)

    @rule(data=st.data())
    def stale_partition_record_is_ignored(self, data: st.DataObject) -> None:
        self._begin_step()
        others = data.draw(st.sets(st.sampled_from(self.replicas[1:])), label="stale isr")
        stale_epoch = self.leader.partition_epoch - data.draw(st.integers(0, 3), label="age")
        before = (
            self.leader.isr,
            self.leader.partition_epoch,
            self.leader.pending_isr_change,
        )
        update = self.leader.on_isr_change_committed((LEADER_ID, *sorted(others)), stale_epoch, self.now_ms)
        assert update is None
        assert (
            self.leader.isr,
            self.leader.partition_epoch,
            self.leader.pending_isr_change,
        ) == before

    @rule(data=st.data())
    def retention_advances_log_start(self, data: st.DataObject) -> None:
        self._begin_step()
        offset = data.draw(
            st.integers(self.leader.log_start_offset, self.leader.high_watermark),
            label="start",
        )
        self.leader.advance_log_start_offset(offset)
        assert self.leader.log_start_offset == offset

    # ------------------------------------------------------------- invariants

    @invariant()
    def high_watermark_never_decreases(self) -> None:
        assert self.leader.high_watermark >= self.previous_hw
        self.previous_hw = self.leader.high_watermark

    @invariant()
    def offsets_are_ordered(self) -> None:
        leader = self.leader
        assert leader.log_start_offset <= leader.high_watermark <= leader.log_end_offset

    @invariant()
    def high_watermark_within_every_maximal_isr_member(self) -> None:
        for broker_id in self.leader.maximal_isr:
            if broker_id == LEADER_ID:
                continue
            follower_leo = self.leader.follower(broker_id).log_end_offset
            if follower_leo < 0:
                assert self.leader.high_watermark == self.hw_at_leader_start
            else:
                assert self.leader.high_watermark <= follower_leo

    @invariant()
    def isr_membership(self) -> None:
        for isr in (self.leader.isr, self.leader.maximal_isr):
            assert LEADER_ID in isr
            assert set(isr) <= set(self.replicas)
            assert len(isr) >= 1

    @invariant()
    def high_watermark_frozen_below_min_isr(self) -> None:
        if len(self.leader.isr) < self.leader.effective_min_isr:
            assert self.leader.high_watermark == self.hw_before_step


TestLeaderStateMachine = LeaderStateMachine.TestCase
TestLeaderStateMachine.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
