"""One simulated broker: the real replication state machines driven synchronously.

This is the logic of ``broker/partition.py`` (roles, produce, acks=all purgatory, ISR
proposals), ``broker/replication/fetch_handler.py`` (the leader's side of a follower
fetch, long-poll included) and ``broker/replication/fetcher.py`` (the follower's fetch
loop) with the asyncio taken out: every call runs to completion, messages go through
the simulated ``Network``, and time is the simulation's fake clock. The pure pieces —
``PartitionLeaderState``, ``FollowerState``, ``DelayedProducePurgatory`` — and the
``PartitionLog`` are the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path

from broker.cluster.records import PartitionRecord
from broker.errors import HighwaterError, NotLeaderOrFollower, StaleBrokerEpoch
from broker.record.header import iter_batches
from broker.replication import (
    AppendRecords,
    AwaitLeaderChange,
    DelayedProducePurgatory,
    FetchRequestFields,
    FollowerState,
    HwUpdate,
    LocalLogView,
    PartitionFetchResponse,
    PartitionLeaderState,
    ProposeIsr,
    RetryAfterBackoff,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateFollowerOffsets,
)
from broker.storage import FLUSH_FSYNC
from tests.simulation.storage import SimDisk
from tests.simulation.world import (
    CONTROLLER,
    PARTITION,
    TOPIC,
    AlterIsrResponse,
    SimConfig,
)


@dataclass(frozen=True)
class FetchRequestMessage:
    request_id: int
    fields: FetchRequestFields
    broker_epoch: int
    """The sender's incarnation (KIP-903): a delayed fetch may outlive the process that sent it."""


@dataclass(frozen=True)
class FetchResponseMessage:
    request_id: int
    current_leader_epoch: int
    fetch_offset: int
    response: PartitionFetchResponse
    records: bytes


@dataclass
class _ParkedFetch:
    """A follower fetch with nothing to send yet, answered on append or at its deadline."""

    follower_id: int
    message: FetchRequestMessage
    deadline_ms: int


@dataclass
class _OutstandingFetch:
    request_id: int
    sent_at_ms: int


@dataclass
class Hooks:
    """What a broker needs from the simulation."""

    now_ms: Callable[[], int]
    send: Callable[[int, int, object], None]
    produce_done: Callable[[Hashable, HighwaterError | None], None]
    trace: Callable[[str], None]
    registered_broker_epoch: Callable[[int], int]
    """A broker's incarnation as the metadata registers it, or ``UNKNOWN_BROKER_EPOCH``."""


@dataclass
class SimBroker:
    broker_id: int
    directory: Path
    config: SimConfig
    hooks: Hooks
    disk: SimDisk = field(init=False)
    running: bool = True
    paused: bool = False
    record: PartitionRecord | None = None
    leader_state: PartitionLeaderState | None = None
    follower_state: FollowerState | None = None
    hw_checkpoint: int | None = None
    incarnation: int = 0
    """The broker epoch: a new one at every start."""
    fenced: bool = False
    _high_watermark: int = 0
    _purgatory: DelayedProducePurgatory = field(default_factory=lambda: DelayedProducePurgatory(TOPIC, PARTITION))
    _parked: list[_ParkedFetch] = field(default_factory=list)
    _outstanding: _OutstandingFetch | None = None
    _next_fetch_at_ms: int = 0
    _next_isr_check_at_ms: int = 0
    _next_checkpoint_at_ms: int = 0
    _next_interval_flush_at_ms: int = 0
    _isr_in_flight: tuple[ProposeIsr, int] | None = None
    _request_ids: int = 0
    stale_fetches_refused: int = 0

    def __post_init__(self) -> None:
        self.disk = SimDisk(self.directory, self.config)
        self.disk.open()

    # ----------------------------------------------------------------- views

    @property
    def high_watermark(self) -> int:
        if self.leader_state is not None:
            return self.leader_state.high_watermark
        if self.follower_state is not None:
            return self.follower_state.high_watermark
        return self._high_watermark

    @property
    def active(self) -> bool:
        return self.running and not self.paused

    # ---------------------------------------------------------- crash and restart

    def crash(self, power_loss: bool) -> list[Hashable]:
        """The process dies: every in-memory state is gone; return the produces left hanging."""
        hanging = [completion.request_id for completion in self._purgatory.fail_all_not_leader()]
        self.disk.crash(power_loss)
        self.running = self.paused = False
        self.record = self.leader_state = self.follower_state = None
        self._parked.clear()
        self._outstanding = self._isr_in_flight = None
        self.fenced = False
        return hanging

    def restart(self, hw_checkpoint_lost: bool) -> None:
        """Recover the log from disk; the HW comes from its checkpoint (0 if it was deleted)."""
        self.disk.open()
        if hw_checkpoint_lost:
            self.hw_checkpoint = None
        log = self.disk.log
        self._high_watermark = max(log.log_start_offset, min(self.hw_checkpoint or 0, log.log_end_offset))
        self.incarnation += 1
        self.running = True

    # ------------------------------------------------------------ role changes

    def apply_record(self, record: PartitionRecord) -> None:
        """``Partition.apply_record``: only newer records (leader epoch, partition epoch) count."""
        current = self.record
        if current is not None and (record.leader_epoch, record.partition_epoch) <= (
            current.leader_epoch,
            current.partition_epoch,
        ):
            return
        self.record = record
        self.fenced = False
        same_epoch = current is not None and record.leader_epoch == current.leader_epoch
        if record.leader == self.broker_id:
            if same_epoch and self.leader_state is not None:
                self._on_hw_update(
                    self.leader_state.on_isr_change_committed(record.isr, record.partition_epoch, self.hooks.now_ms())
                )
            else:
                self._become_leader(record)
        elif not (same_epoch and self.follower_state is not None):
            self._become_follower(record)

    def _become_leader(self, record: PartitionRecord) -> None:
        self._resign_leadership()
        self._high_watermark = self.high_watermark
        self.follower_state = None
        log = self.disk.log
        log.assign_epoch(record.leader_epoch, log.log_end_offset)
        epoch_start = log.epoch_cache.start_offset_of(record.leader_epoch)
        now_ms = self.hooks.now_ms()
        self.leader_state = PartitionLeaderState(
            topic=TOPIC,
            partition=PARTITION,
            local_broker_id=self.broker_id,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            replicas=record.replicas,
            isr=record.isr,
            min_insync_replicas=self.config.min_insync_replicas,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            high_watermark=self._high_watermark,
            leader_epoch_start_offset=log.log_end_offset if epoch_start is None else epoch_start,
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
            now_ms=now_ms,
        )
        self._next_isr_check_at_ms = now_ms + self.config.replica_lag_time_max_ms // 2
        self.hooks.trace(
            f"b{self.broker_id} leader epoch={record.leader_epoch} isr={record.isr} "
            f"leo={log.log_end_offset} hw={self.high_watermark}"
        )

    def _become_follower(self, record: PartitionRecord) -> None:
        self._resign_leadership()
        self._high_watermark = self.high_watermark
        self.follower_state = FollowerState(
            topic=TOPIC,
            partition=PARTITION,
            local_broker_id=self.broker_id,
            leader_id=record.leader,
            leader_epoch=record.leader_epoch,
            high_watermark=self._high_watermark,
        )
        self._outstanding = None
        self._next_fetch_at_ms = self.hooks.now_ms()
        self.hooks.trace(f"b{self.broker_id} follower of {record.leader} epoch={record.leader_epoch}")

    def _resign_leadership(self) -> None:
        if self.leader_state is None:
            return
        self._high_watermark = self.high_watermark
        self.leader_state = None
        self._isr_in_flight = None
        for completion in self._purgatory.fail_all_not_leader():
            self.hooks.produce_done(completion.request_id, completion.error)

    # ------------------------------------------------------------ leader: produce

    def produce(self, request_id: Hashable, batch: bytes, acks: str) -> tuple[int, bool] | HighwaterError:
        """``Partition.append``: an error, or (base offset, whether the answer waits for the HW).

        A waiting acks=all produce is answered through ``Hooks.produce_done``, starting
        with the caller's ``complete_waiting_produces`` once it has noted the offsets.
        """
        state = self.leader_state
        if state is None:
            return NotLeaderOrFollower(f"broker {self.broker_id} does not lead {TOPIC}-{PARTITION}")
        if acks == "all" and (refusal := state.check_produce_admission()) is not None:
            return refusal
        now_ms = self.hooks.now_ms()
        info = self.disk.append_as_leader(batch, state.leader_epoch, now_ms)
        self._on_hw_update(state.on_leader_append(self.disk.log.log_end_offset, now_ms))
        self._answer_parked_fetches(force=False)
        if acks != "all":
            return info.base_offset, False
        if self.config.flush_policy == FLUSH_FSYNC:
            self.disk.flush()
        self._purgatory.add(request_id, info.last_offset + 1, now_ms + self.config.produce_timeout_ms)
        return info.base_offset, True

    def complete_waiting_produces(self) -> None:
        """Right after ``produce`` added a wait: the HW may already be past the batch."""
        if self.leader_state is not None:
            self._complete_produces(self.leader_state)

    def _complete_produces(self, state: PartitionLeaderState) -> None:
        for completion in self._purgatory.on_high_watermark(
            state.high_watermark, len(state.maximal_isr), state.effective_min_isr
        ):
            self.hooks.produce_done(completion.request_id, completion.error)

    def _on_hw_update(self, update: HwUpdate | None) -> None:
        if update is not None and self.leader_state is not None:
            self._complete_produces(self.leader_state)

    # --------------------------------------------------------------- leader: ISR

    def _send_isr_proposal(self, proposal: ProposeIsr | None) -> None:
        if proposal is not None:
            self._isr_in_flight = (proposal, self.hooks.now_ms())
            self.hooks.send(self.broker_id, CONTROLLER, proposal)

    def on_alter_isr_response(self, answer: AlterIsrResponse) -> None:
        """``Partition._run_isr_proposal``: a refused CAS drops the change; a commit is adopted."""
        proposal, committed = answer.proposal, answer.committed
        if self._isr_in_flight is not None and self._isr_in_flight[0] == proposal:
            self._isr_in_flight = None
        state = self.leader_state
        if state is None or state.leader_epoch != proposal.leader_epoch:
            return
        now_ms = self.hooks.now_ms()
        if committed is None:
            self._on_hw_update(state.on_isr_change_rejected(proposal, now_ms))
        elif self.record is None or committed.partition_epoch > self.record.partition_epoch:
            self.record = committed
            self._on_hw_update(state.on_isr_change_committed(committed.isr, committed.partition_epoch, now_ms))

    # ------------------------------------------------------ leader: follower fetch

    def on_fetch_request(self, follower_id: int, message: FetchRequestMessage) -> None:
        """``fetch_handler.serve_replica_fetch`` for one partition: record, then read or park."""
        fields = message.fields
        state = self.leader_state
        if state is None:
            error = NotLeaderOrFollower(f"broker {self.broker_id} does not lead {TOPIC}-{PARTITION}")
            self._respond(follower_id, message, self._plain_response(error=error), b"")
            return
        outcome = state.on_follower_fetch(
            fields.replica_id,
            fields.fetch_offset,
            self.hooks.now_ms(),
            last_fetched_epoch=fields.last_fetched_epoch,
            current_leader_epoch=fields.current_leader_epoch,
            epoch_cache=self.disk.log.epoch_cache,
            broker_epoch=message.broker_epoch,
            registered_broker_epoch=self.hooks.registered_broker_epoch(fields.replica_id),
        )
        if isinstance(outcome.error, StaleBrokerEpoch):
            self.stale_fetches_refused += 1
            self.hooks.trace(
                f"broker {self.broker_id} refused a fetch from a dead incarnation: {outcome.error.message}"
            )
        self._on_hw_update(outcome.hw_update)
        self._send_isr_proposal(outcome.propose_isr)
        if outcome.error is not None or outcome.diverging_epoch is not None:
            response = PartitionFetchResponse(
                high_watermark=outcome.high_watermark,
                log_start_offset=outcome.log_start_offset,
                log_end_offset=outcome.log_end_offset,
                error=outcome.error,
                diverging_epoch=outcome.diverging_epoch,
            )
            self._respond(follower_id, message, response, b"")
            return
        parked = _ParkedFetch(follower_id, message, self.hooks.now_ms() + self.config.fetch_max_wait_ms)
        if not self._answer_fetch(parked, force=False):
            self._parked.append(parked)

    def _answer_fetch(self, parked: _ParkedFetch, *, force: bool) -> bool:
        """``fetch_handler._read``: the HW as of now, bytes from the fetch offset to the LEO."""
        high_watermark = self.high_watermark
        try:
            result = self.disk.log.read(parked.message.fields.fetch_offset, self.config.fetch_max_bytes, None)
        except HighwaterError as error:
            self._respond(parked.follower_id, parked.message, self._plain_response(error=error), b"")
            return True
        if not result.data and not force:
            return False
        response = self._plain_response(high_watermark=high_watermark)
        self._respond(parked.follower_id, parked.message, response, result.data)
        return True

    def _answer_parked_fetches(self, *, force: bool) -> None:
        now_ms = self.hooks.now_ms()
        waiting = []
        for parked in self._parked:
            if not self._answer_fetch(parked, force=force or parked.deadline_ms <= now_ms):
                waiting.append(parked)
        self._parked = waiting

    def _plain_response(self, *, error: HighwaterError | None = None, high_watermark: int | None = None):
        log = self.disk.log
        return PartitionFetchResponse(
            high_watermark=self.high_watermark if high_watermark is None else high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            error=error,
        )

    def _respond(self, follower_id, message: FetchRequestMessage, response: PartitionFetchResponse, records: bytes):
        last_offset = None
        for header in iter_batches(records, check_crc=False):
            last_offset = header.last_offset
        response = PartitionFetchResponse(
            high_watermark=response.high_watermark,
            log_start_offset=response.log_start_offset,
            log_end_offset=response.log_end_offset,
            error=response.error,
            diverging_epoch=response.diverging_epoch,
            records_last_offset=last_offset,
        )
        reply = FetchResponseMessage(
            message.request_id,
            message.fields.current_leader_epoch,
            message.fields.fetch_offset,
            response,
            records,
        )
        self.hooks.send(self.broker_id, follower_id, reply)

    # ------------------------------------------------------------------ follower

    def _maybe_send_fetch(self, now_ms: int) -> None:
        """``ReplicaFetcher._run``: one fetch at a time to the leader, retried after a timeout."""
        state = self.follower_state
        if state is None or state.leader_id < 0 or self.fenced:
            return
        if self._outstanding is not None:
            if now_ms - self._outstanding.sent_at_ms < self.config.fetch_timeout_ms:
                return
            self._outstanding = None
            self._next_fetch_at_ms = now_ms + self.config.fetch_backoff_ms
        if now_ms < self._next_fetch_at_ms:
            return
        log = self.disk.log
        self._request_ids += 1
        fields = state.fetch_request(LocalLogView(log.log_start_offset, log.log_end_offset, log.epoch_cache))
        self._outstanding = _OutstandingFetch(self._request_ids, now_ms)
        self.hooks.send(
            self.broker_id, state.leader_id, FetchRequestMessage(self._request_ids, fields, self.incarnation)
        )

    def on_fetch_response(self, message: FetchResponseMessage) -> None:
        """``ReplicaFetcher._apply``: perform what ``FollowerState`` asks, in order."""
        if self._outstanding is None or self._outstanding.request_id != message.request_id:
            return
        self._outstanding = None
        now_ms = self.hooks.now_ms()
        self._next_fetch_at_ms = now_ms
        state = self.follower_state
        if state is None or state.leader_epoch != message.current_leader_epoch:
            return
        log = self.disk.log
        local = LocalLogView(log.log_start_offset, log.log_end_offset, log.epoch_cache)
        if local.log_end_offset != message.fetch_offset:
            return
        try:
            backoff = self._perform(state.on_fetch_response(message.response, local), message.records, now_ms)
        except HighwaterError as error:
            self.hooks.trace(f"b{self.broker_id} fetch apply failed: {error}")
            backoff = True
        if backoff:
            self._next_fetch_at_ms = now_ms + self.config.fetch_backoff_ms

    def _perform(self, actions, records: bytes, now_ms: int) -> bool:
        backoff = False
        for action in actions:
            if isinstance(action, AppendRecords):
                self.disk.append_as_follower(records, now_ms)
                if self.config.flush_policy == FLUSH_FSYNC and self.config.follower_fsync:
                    self.disk.flush()
            elif isinstance(action, TruncateTo):
                self.hooks.trace(f"b{self.broker_id} truncate to {action.offset}")
                self.disk.truncate_to(action.offset)
            elif isinstance(action, TruncateFullyAndStartAt):
                self.hooks.trace(f"b{self.broker_id} truncate fully, start at {action.offset}")
                self.disk.truncate_fully_and_start_at(action.offset)
            elif isinstance(action, UpdateFollowerOffsets):
                if action.log_start_offset > self.disk.log.log_start_offset:
                    self.disk.advance_log_start_offset(action.log_start_offset)
            elif isinstance(action, RetryAfterBackoff):
                backoff = True
            elif isinstance(action, AwaitLeaderChange):
                self.fenced = True
        return backoff

    # -------------------------------------------------------------------- timers

    def tick(self, now_ms: int) -> None:
        """Everything time-driven: fetches, long-poll deadlines, expiry, ISR shrink, checkpoints."""
        self._maybe_send_fetch(now_ms)
        self._answer_parked_fetches(force=False)
        if self.leader_state is not None:
            for completion in self._purgatory.expire(now_ms):
                self.hooks.produce_done(completion.request_id, completion.error)
            if self._isr_in_flight is not None and now_ms - self._isr_in_flight[1] > self.config.fetch_timeout_ms:
                proposal, _ = self._isr_in_flight
                self.on_alter_isr_response(AlterIsrResponse(proposal, None))
            if now_ms >= self._next_isr_check_at_ms:
                self._next_isr_check_at_ms = now_ms + self.config.replica_lag_time_max_ms // 2
                self._send_isr_proposal(self.leader_state.check_isr_shrink(now_ms))
        if now_ms >= self._next_checkpoint_at_ms:
            self._next_checkpoint_at_ms = now_ms + self.config.hw_checkpoint_interval_ms
            self.hw_checkpoint = self.high_watermark
        if self.config.flush_policy == "interval" and now_ms >= self._next_interval_flush_at_ms:
            self._next_interval_flush_at_ms = now_ms + self.config.flush_interval_ms
            self.disk.flush()
