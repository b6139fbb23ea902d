"""One simulated broker: the broker's own ``PartitionReplica`` core, driven synchronously.

Every decision — role changes, produce admission, when an acks=all produce is
answered, what a follower fetch gets, ISR proposals, what a follower fetches and does
with the answer, fencing, back-off — is made by ``broker.replication.PartitionReplica``,
the object the broker's asyncio driver (``broker.replica_io``) runs too. This is only
the other driver: messages go through the simulated ``Network``, time is the
simulation's fake clock, the disk is ``SimDisk`` (the real ``PartitionLog`` with
simulated power loss), and a long-poll fetch is parked here until records arrive or
its deadline passes. A fault the simulation finds is a fault in the broker's code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path

from broker.acks import Acks
from broker.cluster.records import PartitionRecord
from broker.errors import HighwaterError, StaleBrokerEpoch
from broker.replication import (
    AppendRecords,
    FetchRequestFields,
    LocalLogView,
    PartitionFetchResponse,
    PartitionLeaderState,
    PartitionReplica,
    Ready,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateFollowerOffsets,
    fetched_last_offset,
)
from broker.storage.log_config import FLUSH_FSYNC, FLUSH_INTERVAL
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
    sent: FetchRequestFields
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
    core: PartitionReplica = field(init=False)
    running: bool = True
    paused: bool = False
    hw_checkpoint: int | None = None
    incarnation: int = 0
    """The broker epoch: a new one at every start."""
    _parked: list[_ParkedFetch] = field(default_factory=list)
    _outstanding: _OutstandingFetch | None = None
    _next_fetch_at_ms: int = 0
    _isr_sent_at_ms: int = 0
    _next_checkpoint_at_ms: int = 0
    _next_interval_flush_at_ms: int = 0
    _request_ids: int = 0
    _flush_started: bool = False
    """The core asked for a group commit (``Ready.start_flush``); it runs at the next tick,
    so a crash can land between the request and the fsync, as in the broker."""
    stale_fetches_refused: int = 0
    min_insync_replicas: int = field(init=False)
    """The topic's ``min.insync.replicas`` as this broker last applied it."""

    def __post_init__(self) -> None:
        self.min_insync_replicas = self.config.min_insync_replicas
        self.disk = SimDisk(self.directory, self.config)
        self.disk.open()
        self.core = self._new_core(high_watermark=0)

    def _new_core(self, high_watermark: int) -> PartitionReplica:
        return PartitionReplica(
            TOPIC,
            PARTITION,
            local_broker_id=self.broker_id,
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
            fsync_before_acknowledging=self.config.flush_policy == FLUSH_FSYNC,
            high_watermark=high_watermark,
            log_view=self._log_view(),
        )

    def _log_view(self) -> LocalLogView:
        log = self.disk.opened_log
        return LocalLogView(log.log_start_offset, log.log_end_offset, log.epoch_cache, log.recovery_point)

    # ----------------------------------------------------------------- views

    @property
    def leader_state(self) -> PartitionLeaderState | None:
        return self.core.leader_state

    @property
    def high_watermark(self) -> int:
        return self.core.high_watermark

    @property
    def active(self) -> bool:
        return self.running and not self.paused

    # ---------------------------------------------------------- crash and restart

    def crash(self, power_loss: bool) -> list[Hashable]:
        """The process dies: every in-memory state is gone; return the produces left hanging."""
        hanging = [completion.request_id for completion in self.core.stop().completions]
        self.disk.crash(power_loss)
        self.running = self.paused = False
        self._flush_started = False
        self._parked.clear()
        self._outstanding = None
        return hanging

    def restart(self, hw_checkpoint_lost: bool) -> None:
        """Recover the log from disk; the HW comes from its checkpoint (0 if it was deleted)."""
        self.disk.open()
        if hw_checkpoint_lost:
            self.hw_checkpoint = None
        self.core = self._new_core(high_watermark=self.hw_checkpoint or 0)
        self.incarnation += 1
        self.running = True

    # ------------------------------------------------------------ performing Ready

    def _perform(self, ready: Ready) -> None:
        """The parts of a ``Ready`` every event may carry (log actions are the fetch path's)."""
        if ready.assign_epoch is not None:
            self.disk.opened_log.assign_epoch(*ready.assign_epoch)
        if ready.start_flush:
            self._flush_started = True
        for completion in ready.completions:
            self.hooks.produce_done(completion.request_id, completion.error)
        if ready.propose_isr is not None:
            self._isr_sent_at_ms = self.hooks.now_ms()
            self.hooks.send(self.broker_id, CONTROLLER, ready.propose_isr)
        if ready.role_changed:
            self._outstanding = None
            self._next_fetch_at_ms = self.hooks.now_ms()
            self.hooks.trace(
                f"b{self.broker_id} {'leader' if self.core.is_leader else 'follower'} of epoch "
                f"{self.core.leader_epoch} leader={self.core.leader_id} "
                f"leo={self.disk.opened_log.log_end_offset} hw={self.high_watermark}"
            )

    def apply_record(self, record: PartitionRecord) -> None:
        self._perform(self.core.apply_record(record, self.min_insync_replicas, self._log_view(), self.hooks.now_ms()))

    def apply_min_insync_replicas(self, min_insync_replicas: int) -> None:
        """The watch delivered the topic record with an altered ``min.insync.replicas``
        (``ReplicaManager.apply_topic_record``); the flush policy stays the profile's."""
        if min_insync_replicas == self.min_insync_replicas:
            return
        self.min_insync_replicas = min_insync_replicas
        fsync = self.config.flush_policy == FLUSH_FSYNC
        self._perform(self.core.apply_topic_config(min_insync_replicas, fsync, self._log_view(), self.hooks.now_ms()))

    # ------------------------------------------------------------ leader: produce

    def produce(self, request_id: Hashable, batch: bytes, acks: Acks) -> tuple[int, int | None] | HighwaterError:
        """``Partition.append``: an error, or (base offset, the offset an acks=all answer waits for).

        A waiting produce is answered through ``Hooks.produce_done``, starting with the
        caller's ``await_replication`` once it has noted the offsets.
        """
        acks_all = acks is Acks.ALL
        refusal = self.core.admit_produce(acks_all=acks_all)
        if refusal is not None:
            return refusal
        now_ms = self.hooks.now_ms()
        leader_epoch = self.core.leader_epoch
        info = self.disk.append_as_leader(batch, leader_epoch, now_ms)
        ready = self.core.on_appended(leader_epoch, self.disk.opened_log.log_end_offset, now_ms, acks_all=acks_all)
        self._perform(ready)
        self._answer_parked_fetches(force=False)
        if not acks_all:
            return info.base_offset, None
        if ready.flush_before_acknowledging:
            self.disk.flush()
            self._perform(self.core.on_flushed(self.disk.opened_log.recovery_point, now_ms))
        return info.base_offset, info.last_offset + 1

    def await_replication(self, request_id: Hashable, required_offset: int) -> None:
        deadline_ms = self.hooks.now_ms() + self.config.produce_timeout_ms
        self._perform(self.core.await_replication(request_id, required_offset, deadline_ms))

    # --------------------------------------------------------------- leader: ISR

    def on_alter_isr_response(self, answer: AlterIsrResponse) -> None:
        self._perform(self.core.on_isr_result(answer.proposal, answer.committed, self.hooks.now_ms()))

    # ------------------------------------------------------ leader: follower fetch

    def on_fetch_request(self, follower_id: int, message: FetchRequestMessage) -> None:
        """``fetch_handler.serve_replica_fetch`` for one partition: record, then read or park."""
        outcome, ready = self.core.on_follower_fetch(
            message.fields,
            broker_epoch=message.broker_epoch,
            registered_broker_epoch=self.hooks.registered_broker_epoch(message.fields.replica_id),
            log_view=self._log_view(),
            now_ms=self.hooks.now_ms(),
        )
        if isinstance(outcome.error, StaleBrokerEpoch):
            self.stale_fetches_refused += 1
            self.hooks.trace(
                f"broker {self.broker_id} refused a fetch from a dead incarnation: {outcome.error.message}"
            )
        self._perform(ready)
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
            result = self.disk.opened_log.read(parked.message.fields.fetch_offset, self.config.fetch_max_bytes, None)
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

    def _plain_response(
        self, *, error: HighwaterError | None = None, high_watermark: int | None = None
    ) -> PartitionFetchResponse:
        log = self.disk.opened_log
        return PartitionFetchResponse(
            high_watermark=self.high_watermark if high_watermark is None else high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            error=error,
        )

    def _respond(
        self, follower_id: int, message: FetchRequestMessage, response: PartitionFetchResponse, records: bytes
    ) -> None:
        response = dataclasses.replace(response, records_last_offset=fetched_last_offset(records))
        reply = FetchResponseMessage(message.request_id, message.fields, response, records)
        self.hooks.send(self.broker_id, follower_id, reply)

    # ------------------------------------------------------------------ follower

    def _maybe_send_fetch(self, now_ms: int) -> None:
        """``ReplicaFetcher._run``: one fetch at a time to the leader, retried after a timeout."""
        if self._outstanding is not None:
            if now_ms - self._outstanding.sent_at_ms < self.config.fetch_timeout_ms:
                return
            self._outstanding = None
            self._next_fetch_at_ms = now_ms + self.config.fetch_backoff_ms
        if now_ms < self._next_fetch_at_ms:
            return
        if self.config.follower_fsync and self.core.must_flush_before_fetching(self._log_view()):
            self.disk.flush()
        fields = self.core.fetch_request(self._log_view())
        if fields is None:
            return
        self._request_ids += 1
        self._outstanding = _OutstandingFetch(self._request_ids, now_ms)
        message = FetchRequestMessage(self._request_ids, fields, self.incarnation)
        self.hooks.send(self.broker_id, self.core.leader_id, message)

    def on_fetch_response(self, message: FetchResponseMessage) -> None:
        """``Partition.apply_fetch_response``: perform what the core asks, in order."""
        if self._outstanding is None or self._outstanding.request_id != message.request_id:
            return
        self._outstanding = None
        now_ms = self.hooks.now_ms()
        self._next_fetch_at_ms = now_ms
        try:
            ready = self.core.on_fetch_response(message.sent, message.response, self._log_view())
            self._perform_log_actions(ready, message.records, now_ms)
        except HighwaterError as error:
            self.hooks.trace(f"b{self.broker_id} fetch apply failed: {error}")
            self._next_fetch_at_ms = now_ms + self.config.fetch_backoff_ms
            return
        self._perform(ready)
        if ready.backoff:
            self._next_fetch_at_ms = now_ms + self.config.fetch_backoff_ms

    def _perform_log_actions(self, ready: Ready, records: bytes, now_ms: int) -> None:
        for action in ready.log_actions:
            if isinstance(action, AppendRecords):
                self.disk.append_as_follower(records, now_ms)
            elif isinstance(action, TruncateTo):
                self.hooks.trace(f"b{self.broker_id} truncate to {action.offset}")
                self.disk.truncate_to(action.offset)
                self.core.on_log_truncated(self.disk.opened_log.log_end_offset)
            elif isinstance(action, TruncateFullyAndStartAt):
                self.hooks.trace(f"b{self.broker_id} truncate fully, start at {action.offset}")
                self.disk.truncate_fully_and_start_at(action.offset)
            elif (
                isinstance(action, UpdateFollowerOffsets)
                and action.log_start_offset > self.disk.opened_log.log_start_offset
            ):
                self.disk.advance_log_start_offset(action.log_start_offset)
        if ready.flush and self.config.follower_fsync:
            self.disk.flush()

    # -------------------------------------------------------------------- timers

    def tick(self, now_ms: int) -> None:
        """Everything time-driven: fetches, long-poll deadlines, the core's timers, checkpoints.

        An ISR proposal the controller did not answer within the fetch timeout (the
        message was lost) is taken as refused, as a failed store call is in the broker.
        """
        self._maybe_send_fetch(now_ms)
        if self._flush_started:
            self._flush_started = False
            self.disk.flush()
            self._perform(self.core.on_flushed(self.disk.opened_log.recovery_point, now_ms))
        self._answer_parked_fetches(force=False)
        proposal = self.core.isr_in_flight
        if proposal is not None and now_ms - self._isr_sent_at_ms > self.config.fetch_timeout_ms:
            self._perform(self.core.on_isr_result(proposal, None, now_ms))
        self._perform(self.core.tick(now_ms))
        if now_ms >= self._next_checkpoint_at_ms:
            self._next_checkpoint_at_ms = now_ms + self.config.hw_checkpoint_interval_ms
            self.hw_checkpoint = self.high_watermark
        if self.config.flush_policy == FLUSH_INTERVAL and now_ms >= self._next_interval_flush_at_ms:
            self._next_interval_flush_at_ms = now_ms + self.config.flush_interval_ms
            self.disk.flush()
