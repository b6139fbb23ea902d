"""One partition replica's decisions, sans I/O: the code the broker runs and the simulation proves.

``PartitionReplica`` composes the pure state machines — ``PartitionLeaderState`` or
``FollowerState`` by role, and the acks=all ``DelayedProducePurgatory`` — and is the
only place that decides, for one replica of one partition:

- which role it has (the partition record, in (leader epoch, partition epoch) order);
- whether a produce is admitted, when an acks=all produce is answered and with what;
- what a follower fetch is answered, which HW rises and which ISR change it causes;
- what this follower fetches next, what it does with the answer, when it stops
  fetching (fenced) and when it backs off;
- when an ISR shrink is due, when a waiting produce expires.

It never touches a file, a socket, a task or a clock: time enters as ``now_ms``, the
local log as a ``LocalLogView``, and every event returns a ``Ready`` (``ready.py``)
that the driver performs. The broker's asyncio driver (``broker.replica_io``) and the
simulation's synchronous driver (``tests/simulation/replica.py``) feed it the same
events, so a fault the simulation finds is a fault in this code.

Invariants (checked by the simulation after every step):
``log_start_offset <= high_watermark <= log_end_offset``; a leader's HW never moves
back; every acks=all waiter is answered exactly once — when the HW passes it with
min ISR held, at its deadline, or NOT_LEADER_OR_FOLLOWER when leadership ends.

Durability under the ``fsync`` policy: the HW counts, on every replica, only what
that replica has fsynced. A follower's fetch offset is its LEO, so a follower fsyncs
what it appended before fetching again (``Ready.flush``) and never fetches with an
unflushed tail (``must_flush_before_fetching``); a leader's own log counts up to its
flushed offset, and when that alone holds the HW back the leader asks its driver for
a group-committed fsync (``Ready.start_flush``, answered with ``on_flushed``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable

import structlog

from broker.cluster.records import PartitionRecord
from broker.errors import HighwaterError, NotLeaderOrFollower
from broker.replication.actions import (
    AppendRecords,
    AwaitLeaderChange,
    FetchOutcome,
    FollowerAction,
    HwUpdate,
    ProposeIsr,
    RetryAfterBackoff,
)
from broker.replication.follower import FetchRequestFields, FollowerState, LocalLogView, PartitionFetchResponse
from broker.replication.isr_change import IsrChangeAnswer, IsrChangeRefused
from broker.replication.leader import PartitionLeaderState
from broker.replication.purgatory import DelayedProducePurgatory, ProduceCompletion
from broker.replication.ready import NOTHING, Ready
from broker.replication.replica_state import FetchRounds

log = structlog.get_logger(__name__)


class PartitionReplica:
    """The local replica of ``topic-partition``: leader or follower by the partition record."""

    def __init__(
        self,
        topic: str,
        partition: int,
        *,
        local_broker_id: int,
        replica_lag_time_max_ms: int,
        fsync_before_acknowledging: bool,
        high_watermark: int,
        log_view: LocalLogView,
    ) -> None:
        """``fsync_before_acknowledging`` is the ``fsync`` flush policy: an acks=all answer,
        a follower's next fetch (which the leader takes as an acknowledgement of
        everything below it) and a rise of the leader's HW all wait until the bytes
        they count are fsynced."""
        self.topic = topic
        self.partition = partition
        self.local_broker_id = local_broker_id
        self._lag_time_max_ms = replica_lag_time_max_ms
        self._fsync = fsync_before_acknowledging
        self.record: PartitionRecord | None = None
        self.leader_state: PartitionLeaderState | None = None
        self.follower_state: FollowerState | None = None
        self._high_watermark = max(log_view.log_start_offset, min(high_watermark, log_view.log_end_offset))
        self._purgatory = DelayedProducePurgatory(topic, partition)
        self._next_isr_check_ms = 0
        self._flushes_in_flight = 0
        """fsyncs asked for (``Ready.start_flush``, ``Ready.flush_before_acknowledging``) and not reported yet."""
        self.isr_in_flight: ProposeIsr | None = None
        """The ISR change sent to the controller and not answered yet (at most one)."""
        self.fenced = False
        """A follower told its leader epoch is stale stops fetching until a newer record."""

    # ------------------------------------------------------------------ views

    @property
    def leader_id(self) -> int:
        return self.record.leader if self.record else -1

    @property
    def leader_epoch(self) -> int:
        return self.record.leader_epoch if self.record else -1

    @property
    def is_leader(self) -> bool:
        return self.leader_state is not None

    @property
    def high_watermark(self) -> int:
        if self.leader_state is not None:
            return self.leader_state.high_watermark
        if self.follower_state is not None:
            return self.follower_state.high_watermark
        return self._high_watermark

    @property
    def latest_offset_available(self) -> bool:
        """Whether this replica may answer "latest" (it leads, and its HW reached its epoch's start)."""
        return self.leader_state is not None and self.leader_state.high_watermark_reached_epoch_start

    def replicas_state(self, now_ms: int) -> list[dict] | None:
        return self.leader_state.replicas_state(now_ms) if self.leader_state else None

    def require_leader(self) -> PartitionLeaderState:
        if self.leader_state is None:
            raise self._not_leader()
        return self.leader_state

    def _not_leader(self) -> NotLeaderOrFollower:
        return NotLeaderOrFollower(
            f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.partition}",
            leader_id=self.leader_id,
            topic=self.topic,
            partition=self.partition,
        )

    # ------------------------------------------------------------ role changes

    def apply_record(
        self, record: PartitionRecord, min_insync_replicas: int, log_view: LocalLogView, now_ms: int
    ) -> Ready:
        """Follow the partition record: become leader, follower, or take an ISR change.

        Records older than the one applied (by leader epoch, then partition epoch) are
        ignored, so the role only ever moves forward in epoch order. A newer record
        ends a fenced follower's wait, and resolves a leader's pending ISR change
        (nothing is in flight any more: the change's answer, if it comes, changes nothing).
        """
        current = self.record
        if current is not None and (record.leader_epoch, record.partition_epoch) <= (
            current.leader_epoch,
            current.partition_epoch,
        ):
            return NOTHING
        self.record = record
        self.fenced = False
        same_epoch = current is not None and record.leader_epoch == current.leader_epoch
        if record.leader == self.local_broker_id:
            if same_epoch and self.leader_state is not None:
                self.isr_in_flight = None
                if current is not None and record.replicas != current.replicas:
                    self.leader_state.on_replicas_changed(record.replicas)
                return self._after_hw_update(
                    self.leader_state.on_isr_change_committed(record.isr, record.partition_epoch, now_ms), now_ms
                )
            return self._become_leader(record, min_insync_replicas, log_view, now_ms)
        if same_epoch and self.follower_state is not None:
            return NOTHING
        return self._become_follower(record)

    def apply_topic_config(
        self, min_insync_replicas: int, fsync_before_acknowledging: bool, log_view: LocalLogView, now_ms: int
    ) -> Ready:
        """The topic's ``min.insync.replicas`` or flush policy was altered while this replica lives.

        A follower only changes whether it fsyncs before its next fetch; a leader also
        re-evaluates its HW and its waiting acks=all produces under the new values, and
        asks for an fsync when the ``fsync`` policy now holds the HW back. A later
        leadership takes the values from ``apply_record``'s caller, which reads the same
        topic record.
        """
        self._fsync = fsync_before_acknowledging
        state = self.leader_state
        if state is None:
            return NOTHING
        update = state.on_topic_config(min_insync_replicas, fsync_before_acknowledging, log_view.recovery_point, now_ms)
        ready = self._completions(state, high_watermark_moved=update is not None)
        if self._start_flush_if_it_raises_hw(now_ms):
            ready = dataclasses.replace(ready, start_flush=True)
        return ready

    def _become_leader(
        self, record: PartitionRecord, min_insync_replicas: int, log_view: LocalLogView, now_ms: int
    ) -> Ready:
        """Kafka ``makeLeader``: (epoch, LEO) goes into the epoch cache first (KIP-101).

        The cache keeps the first start offset it saw for an epoch, so a leader that
        resumes an epoch keeps that epoch's start.
        """
        completions = self._resign_leadership(record.leader)
        self.follower_state = None
        epoch_start = log_view.epoch_cache.start_offset_of(record.leader_epoch)
        self.leader_state = PartitionLeaderState(
            topic=self.topic,
            partition=self.partition,
            local_broker_id=self.local_broker_id,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            replicas=record.replicas,
            isr=record.isr,
            min_insync_replicas=min_insync_replicas,
            log_start_offset=log_view.log_start_offset,
            log_end_offset=log_view.log_end_offset,
            high_watermark=self._high_watermark,
            leader_epoch_start_offset=log_view.log_end_offset if epoch_start is None else epoch_start,
            replica_lag_time_max_ms=self._lag_time_max_ms,
            now_ms=now_ms,
            flush_bounds_high_watermark=self._fsync,
            flushed_offset=log_view.recovery_point,
        )
        self._flushes_in_flight = 0
        self._next_isr_check_ms = now_ms + self._lag_time_max_ms // 2
        log.info(
            "partition.became_leader",
            topic=self.topic,
            partition=self.partition,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            isr=record.isr,
            log_end_offset=log_view.log_end_offset,
            high_watermark=self.high_watermark,
        )
        return Ready(
            assign_epoch=(record.leader_epoch, log_view.log_end_offset),
            completions=completions,
            start_flush=self._start_flush_if_it_raises_hw(now_ms),
            high_watermark_moved=True,
            role_changed=True,
        )

    def _become_follower(self, record: PartitionRecord) -> Ready:
        """Kafka ``makeFollower``: no truncation here; the first fetch's epoch check decides."""
        completions = self._resign_leadership(record.leader)
        self.follower_state = FollowerState(
            topic=self.topic,
            partition=self.partition,
            local_broker_id=self.local_broker_id,
            leader_id=record.leader,
            leader_epoch=record.leader_epoch,
            high_watermark=self._high_watermark,
        )
        log.info(
            "partition.became_follower",
            topic=self.topic,
            partition=self.partition,
            leader_id=record.leader,
            leader_epoch=record.leader_epoch,
            high_watermark=self._high_watermark,
        )
        return Ready(completions=completions, high_watermark_moved=True, role_changed=True)

    def _resign_leadership(self, new_leader_id: int) -> tuple[ProduceCompletion, ...]:
        """A deposed leader stops acknowledging at once: every waiting acks=all fails."""
        self._high_watermark = self.high_watermark
        if self.leader_state is None:
            return ()
        self.leader_state = None
        self.isr_in_flight = None
        return tuple(self._purgatory.fail_all_not_leader(new_leader_id))

    def stop(self) -> Ready:
        """The replica is going away (topic deleted, broker stopping, process killed)."""
        completions = self._resign_leadership(-1)
        self.follower_state = None
        return Ready(completions=completions, high_watermark_moved=True, role_changed=True)

    # ------------------------------------------------------------ leader: produce

    def admit_produce(self, *, acks_all: bool) -> HighwaterError | None:
        """Before anything is written: not the leader, or acks=all below min ISR, refuses."""
        if self.leader_state is None:
            return self._not_leader()
        return self.leader_state.check_produce_admission() if acks_all else None

    def on_appended(self, leader_epoch: int, log_end_offset: int, now_ms: int, *, acks_all: bool = False) -> Ready:
        """The leader appended up to ``log_end_offset`` under ``leader_epoch``, for an acks=all produce or not.

        An append that outlived its leadership (the epoch changed while it was written)
        moves nothing: the new role's state was built from the log as it was then.
        Under the ``fsync`` policy an acks=all answer waits for its bytes to be fsynced
        (``Ready.flush_before_acknowledging``): that fsync is counted in flight from here,
        so the core asks for no other (``start_flush``) meanwhile: it raises the flushed
        offset soon, and a second one queued behind it would only cost the producers
        waiting for the next group commit.
        """
        if self.leader_state is None or self.leader_state.leader_epoch != leader_epoch:
            return NOTHING
        flush_first = acks_all and self._fsync
        if flush_first:
            self._flushes_in_flight += 1
        ready = self._after_hw_update(self.leader_state.on_leader_append(log_end_offset, now_ms), now_ms)
        return dataclasses.replace(ready, flush_before_acknowledging=True) if flush_first else ready

    def on_flushed(self, flushed_offset: int, now_ms: int) -> Ready:
        """An fsync of the local log completed; everything below ``flushed_offset`` is durable.

        Answers ``Ready.start_flush`` and ``Ready.flush_before_acknowledging`` alike. Under the
        ``fsync`` policy a leader's HW may rise to it, and a new fsync is asked for
        when appends made since still hold the HW back. A driver whose fsync failed
        reports the log's recovery point all the same (it did not move), so the core
        may ask again.
        """
        self._flushes_in_flight = max(0, self._flushes_in_flight - 1)
        if self.leader_state is None:
            return NOTHING
        return self._after_hw_update(self.leader_state.on_leader_flushed(flushed_offset, now_ms), now_ms)

    def await_replication(self, request_id: Hashable, required_offset: int, deadline_ms: int) -> Ready:
        """An acks=all produce waits until the HW reaches ``required_offset`` (or its deadline).

        The answer may be immediate: the HW can already be past the batch.
        """
        if self.leader_state is None:
            return Ready(completions=(ProduceCompletion(request_id, self._not_leader()),))
        self._purgatory.add(request_id, required_offset, deadline_ms)
        return self._completions(self.leader_state)

    def _completions(self, state: PartitionLeaderState, *, high_watermark_moved: bool = False) -> Ready:
        completions = self._purgatory.on_high_watermark(
            state.high_watermark, len(state.maximal_isr), state.effective_min_isr
        )
        return Ready(
            completions=tuple(completions),
            high_watermark_moved=high_watermark_moved,
            next_deadline_ms=self._purgatory.next_deadline_ms(),
        )

    def _after_hw_update(self, update: HwUpdate | None, now_ms: int) -> Ready:
        if self.leader_state is None:
            return NOTHING
        ready = NOTHING if update is None else self._completions(self.leader_state, high_watermark_moved=True)
        if self._start_flush_if_it_raises_hw(now_ms):
            ready = dataclasses.replace(ready, start_flush=True)
        return ready

    def _start_flush_if_it_raises_hw(self, now_ms: int) -> bool:
        """Ask for an fsync when only the leader's unflushed tail holds the HW back and
        none is in flight.

        Asking on every append would fsync acks=1 traffic the HW does not wait for yet;
        asking only here costs one group commit per HW rise, overlapping the followers'.
        """
        state = self.leader_state
        if self._flushes_in_flight or state is None or not state.flush_would_raise_high_watermark(now_ms):
            return False
        self._flushes_in_flight += 1
        return True

    # --------------------------------------------------------------- leader: ISR

    def on_isr_result(self, proposal: ProposeIsr, answer: IsrChangeAnswer, now_ms: int) -> Ready:
        """The controller's answer to ``proposal``: the committed record, or its refusal.

        A commit is adopted unless a newer record already arrived. A refusal of the
        change itself drops it. A refusal because the record had moved on keeps the
        change pending, its replicas counted in the maximal ISR, until the newer record
        arrives and resolves it (``isr_change`` says why: the change may have been taken).
        """
        if self.isr_in_flight == proposal:
            self.isr_in_flight = None
        state = self.leader_state
        if state is None or state.leader_epoch != proposal.leader_epoch:
            return NOTHING
        if isinstance(answer, IsrChangeRefused):
            if answer.record_moved:
                return NOTHING
            return self._after_hw_update(state.on_isr_change_rejected(proposal, now_ms), now_ms)
        committed = answer
        if self.record is not None and committed.partition_epoch <= self.record.partition_epoch:
            return NOTHING
        self.record = committed
        return self._after_hw_update(
            state.on_isr_change_committed(committed.isr, committed.partition_epoch, now_ms), now_ms
        )

    def _propose(self, proposal: ProposeIsr | None) -> ProposeIsr | None:
        if proposal is not None:
            self.isr_in_flight = proposal
        return proposal

    def on_log_start_advanced(self, log_start_offset: int) -> None:
        """Retention deleted segments below the HW: the leader's log start moves up."""
        if self.leader_state is not None:
            self.leader_state.advance_log_start_offset(log_start_offset)

    # ------------------------------------------------------ leader: follower fetch

    def on_follower_fetch(
        self,
        fields: FetchRequestFields,
        *,
        broker_epoch: int,
        registered_broker_epoch: int,
        log_view: LocalLogView,
        now_ms: int,
    ) -> tuple[FetchOutcome, Ready]:
        """Validate and record one partition of a follower fetch (state only, no disk).

        ``broker_epoch`` is the one the fetch carries, ``registered_broker_epoch`` the
        one this broker's metadata holds for the follower (KIP-903). The outcome says
        whether to refuse, to send a diverging epoch, or to read from an offset.
        """
        state = self.leader_state
        if state is None:
            refusal = FetchOutcome(
                high_watermark=self.high_watermark,
                log_start_offset=log_view.log_start_offset,
                log_end_offset=log_view.log_end_offset,
                error=self._not_leader(),
            )
            return refusal, NOTHING
        outcome = state.on_follower_fetch(
            fields.replica_id,
            fields.fetch_offset,
            now_ms,
            last_fetched_epoch=fields.last_fetched_epoch,
            current_leader_epoch=fields.current_leader_epoch,
            epoch_cache=log_view.epoch_cache,
            broker_epoch=broker_epoch,
            registered_broker_epoch=registered_broker_epoch,
            log_start_offset=fields.log_start_offset,
        )
        ready = self._after_hw_update(outcome.hw_update, now_ms)
        proposal = self._propose(outcome.propose_isr)
        if proposal is not None:
            ready = dataclasses.replace(ready, propose_isr=proposal)
        return outcome, ready

    def on_repeated_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        current_leader_epoch: int,
        *,
        broker_epoch: int,
        registered_broker_epoch: int,
        now_ms: int,
    ) -> bool:
        """A fetch repeating the follower's previous one, recorded in O(1) when that is exact
        (``PartitionLeaderState.on_repeated_follower_fetch``); False: call ``on_follower_fetch``."""
        state = self.leader_state
        return state is not None and state.on_repeated_follower_fetch(
            replica_id,
            fetch_offset,
            now_ms,
            current_leader_epoch=current_leader_epoch,
            broker_epoch=broker_epoch,
            registered_broker_epoch=registered_broker_epoch,
        )

    # ------------------------------------------------------------------ follower

    def follow_fetch_rounds(self, replica_id: int, rounds: FetchRounds) -> None:
        """While leader: ``PartitionLeaderState.follow_rounds``."""
        if self.leader_state is not None:
            self.leader_state.follow_rounds(replica_id, rounds)

    def stop_following_fetch_rounds(self, replica_id: int | None = None) -> None:
        """While leader: ``PartitionLeaderState.stop_following_rounds``."""
        if self.leader_state is not None:
            self.leader_state.stop_following_rounds(replica_id)

    def fetch_request(self, log_view: LocalLogView) -> FetchRequestFields | None:
        """What this follower asks its leader for next, or None while it must not fetch."""
        state = self.follower_state
        if state is None or state.leader_id < 0 or self.fenced:
            return None
        return state.fetch_request(log_view)

    def must_flush_before_fetching(self, log_view: LocalLogView) -> bool:
        """Under the ``fsync`` policy, whether the log must be fsynced before the next fetch.

        The fetch offset is the LEO and the leader counts everything below it as held
        here; a tail this replica never fsynced (appended while it led, or a flush that
        failed) would count bytes a power loss takes.
        """
        return self._fsync and log_view.recovery_point < log_view.log_end_offset

    def on_fetch_response(
        self, sent: FetchRequestFields, response: PartitionFetchResponse, log_view: LocalLogView
    ) -> Ready:
        """Turn the leader's answer to ``sent`` into log actions for the driver, in order.

        An answer to a fetch made under another leader epoch, or from another log end
        (the log changed while the fetch was out), is dropped: it describes a log this
        replica no longer has.
        """
        state = self.follower_state
        if state is None or state.leader_epoch != sent.current_leader_epoch:
            return NOTHING
        if log_view.log_end_offset != sent.fetch_offset:
            return NOTHING
        actions = state.on_fetch_response(response, log_view)
        for action in actions:
            if isinstance(action, AwaitLeaderChange):
                self.fenced = True
                log.warning(
                    "replica_fetch.fenced",
                    topic=self.topic,
                    partition=self.partition,
                    leader_id=state.leader_id,
                    leader_epoch=state.leader_epoch,
                    error=str(action.error),
                )
        return Ready(
            log_actions=tuple(actions),
            flush=self._fsync and any(isinstance(action, AppendRecords) for action in actions),
            high_watermark_moved=_moves_follower_offsets(actions),
            backoff=any(isinstance(action, RetryAfterBackoff) for action in actions),
        )

    def on_log_truncated(self, log_end_offset: int) -> None:
        """The log cuts whole batches, so it may end below the offset asked for: keep HW <= LEO."""
        if self.follower_state is not None:
            self.follower_state.on_log_truncated(log_end_offset)

    # -------------------------------------------------------------------- timers

    def tick(self, now_ms: int) -> Ready:
        """Time passed: expire waiting produces past their deadline; shrink the ISR when due.

        The ISR check runs every ``replica_lag_time_max_ms / 2`` (Kafka's
        ``isr-expiration`` task), and not while another ISR change is in flight.
        """
        state = self.leader_state
        if state is None:
            return NOTHING
        completions = tuple(self._purgatory.expire(now_ms))
        proposal = None
        if now_ms >= self._next_isr_check_ms:
            self._next_isr_check_ms = now_ms + self._lag_time_max_ms // 2
            proposal = self._propose(state.check_isr_shrink(now_ms))
        return Ready(completions=completions, propose_isr=proposal, next_deadline_ms=self._purgatory.next_deadline_ms())


def _moves_follower_offsets(actions: list[FollowerAction]) -> bool:
    return any(not isinstance(action, (RetryAfterBackoff, AwaitLeaderChange)) for action in actions)
