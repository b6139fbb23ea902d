"""One partition replica on this broker: the asyncio driver around ``PartitionReplica``.

Every decision — role, produce admission, when an acks=all produce is answered, what a
follower fetch gets, ISR changes, what a follower does with its leader's answer — is
made by the pure ``broker.replication.PartitionReplica``, the same object the seeded
simulation drives. This class performs what its ``Ready`` values ask: disk work in
the default executor (the event loop never blocks on a write or an fsync), futures
for waiting acks=all produces, a timer for their deadlines, ISR proposals sent to the
metadata store, and wake-ups for long-poll readers.

Where disk work runs: a small append (at most ``INLINE_APPEND_MAX_BYTES``, no epoch
checkpoint to write, no producer state to load from the log) is a ``write`` to the page
cache, a few microseconds, while a hop to the executor and back costs a thread wake-up
and a loop wake-up, hundreds of microseconds on a busy host; such appends run on the
event loop. Anything that may read the disk (a large batch, a new leader epoch's
checkpoint, loading producer state) stays in the executor, and so does every fsync but
one: a follower's fsync of a small answer that was the only partition of its fetch
answer (``INLINE_FLUSH_MAX_BYTES``), the lone acks=all write's case, where the hop cost
more than the fsync itself (measured below). A disk may be slow: ``InlineFsyncGuard``
sends this replica's fsyncs back to the executor for a while when the inline ones are
slow on average or one stalls, so a slow disk does not stall the loop on every answer.

One task at a time owns the state: everything runs on the event loop, and an
``asyncio.Lock`` (``_log_lock``) serialises every log mutation — leader appends,
follower appends and truncations — so offsets are assigned in admission order.
Reads run concurrently.

Visibility rule (the reason the project exists): readers get only records below the
high watermark, and ``read_committed`` readers only below the last stable offset.
Invariant: ``log_start_offset <= last_stable_offset <= high_watermark <= log_end_offset``;
on a leader the high watermark never moves back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

import structlog

from broker.acks import Acks
from broker.backoff import Backoff
from broker.clock import wall_clock_ms
from broker.cluster.records import PartitionRecord
from broker.errors import HighwaterError, InvalidRequest, OffsetOutOfRange, RequestTimedOut
from broker.isolation import Isolation
from broker.record.control import TransactionMarker, encode_marker_batch
from broker.replica_io.inline_fsync import PAUSE_MS, InlineFsyncGuard
from broker.replica_io.signal import Signal
from broker.replica_io.trace import trace
from broker.replica_io.transactional import TransactionalWrites, TransactionCalls
from broker.replication import (
    AppendRecords,
    FetchOutcome,
    FetchRequestFields,
    LocalLogView,
    PartitionFetchResponse,
    PartitionLeaderState,
    PartitionReplica,
    ProposeIsr,
    Ready,
    TruncateFullyAndStartAt,
    TruncateTo,
    UpdateFollowerOffsets,
)
from broker.replication.isr_change import IsrChangeAnswer
from broker.replication.ready import NOTHING
from broker.replication.replica_state import FetchRounds
from broker.replication.throttle import is_throttled
from broker.storage.flusher import GroupCommitFlusher
from broker.storage.log import CheckedBatches, PartitionLog, ReadResult, check_batches
from broker.storage.log_config import FLUSH_FSYNC, LogConfig
from broker.storage.producer_state import ProducerStateManager, is_idempotent
from broker.waiting import wait_event

log = structlog.get_logger(__name__)

DELETE_TO_HIGH_WATERMARK = -1
"""DeleteRecords' offset that means "everything below the high watermark" (Kafka's ``HIGH_WATERMARK``)."""

INLINE_FLUSH_MAX_BYTES = 64 * 1024
"""A follower's fsync after applying at most this many bytes, the only partition of its fetch
answer, runs on the event loop (see the module docstring).

Measured on the 2-core dev host: a small append's fsync takes ~190 µs p50 inline and
~320 µs as an executor round trip on an idle loop; on three busy brokers the follower's
fsync stage of a lone acks=all write took 511 µs p50 through the executor and 316 µs on the
loop (``python -m broker.bench.latency_trace``). Over six interleaved rounds of ``highwater
bench latency --spawn 3 --replication-factor 3 --acks all`` the write's p50 went from a
median of 2.25 ms (before the replication stream and this) to 1.92 ms. Larger answers come
under load, where one fsync covers many batches and the loop has other work: the executor."""

TAIL_READ_MAX_BYTES = 256 * 1024
"""The most a caught-up reader's fetch (a follower's or a consumer's) reads on the event loop: a page-cache copy."""

INLINE_APPEND_MAX_BYTES = 256 * 1024
"""Appends up to this many bytes are written from the event loop (see the module docstring).

Measured on the 2-core dev host (uvloop): writing a 113 KB batch (1 000 records of
100 B) to the page cache takes ~35 µs on the loop and ~110 µs as an executor round
trip, so up to ~256 KiB (~80 µs of writing) the hop costs more than it hides. The same
size caps a caught-up follower's tail read on the loop (``fetch_handler``)."""

IsrProposer = Callable[[ProposeIsr], Awaitable["IsrChangeAnswer | None"]]
"""Writes an ISR change as compare-and-set: the committed record, the refusal, or None when
no answer came (the outcome is unknown: the change may have been written)."""

ISR_RETRY_INITIAL_S = 0.05
ISR_RETRY_MAX_S = 1.0
"""An ISR change that got no answer is asked again: after 50 ms, doubling up to 1 s."""
FLUSH_RETRY_INITIAL_S = 0.01
FLUSH_RETRY_MAX_S = 1.0
"""A failed fsync is asked again after 10 ms, doubling to 1 s while the disk keeps failing."""


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    base_offset: int
    last_offset: int
    log_append_time_ms: int


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    transaction_start_offset: int
    """The first offset of the transaction it has open here; -1 when none is."""


class QuietWatcher(Protocol):
    """A leader's fetch session (``fetch_session.LeaderSession``) as a replica sees it."""

    rounds: FetchRounds

    def stir(self, key: tuple[str, int]) -> None: ...


_GENERATIONS = itertools.count(1)
"""One sequence for every replica of the process, so no two states of any two replicas share a generation."""


class Partition:
    """A local replica of ``topic-partition``, leader or follower by the partition record."""

    def __init__(
        self,
        topic: str,
        partition: int,
        log_: PartitionLog,
        flusher: GroupCommitFlusher,
        *,
        local_broker_id: int,
        replica_lag_time_max_ms: int,
        propose_isr: IsrProposer,
        high_watermark: int,
        clock_ms: Callable[[], int] = wall_clock_ms,
        transaction_calls: TransactionCalls | None = None,
        on_marker_written: Callable[[Partition, TransactionMarker], None] | None = None,
        checkpoint_log_starts: Callable[[], None] | None = None,
        inline_flush_max_bytes: int = INLINE_FLUSH_MAX_BYTES,
        fsync_timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.topic = topic
        self._inline_flush_max_bytes = inline_flush_max_bytes
        self._inline_fsync = InlineFsyncGuard()
        self._fsync_timer = fsync_timer
        """Seconds, to time an inline fsync: ``perf_counter`` (the loop's clock has millisecond
        steps); the simulation's virtual clock there, so a run never depends on real time."""
        self._on_marker_written = on_marker_written
        self._checkpoint_log_starts = checkpoint_log_starts
        """Writes every log's start offset durably (``LogManager``): ``_advance_log_start`` calls it."""
        self._clock_ms = clock_ms
        self.partition = partition
        self.log = log_
        self._flusher = flusher
        self.local_broker_id = local_broker_id
        self._propose_isr = propose_isr
        self.core = PartitionReplica(
            topic,
            partition,
            local_broker_id=local_broker_id,
            replica_lag_time_max_ms=replica_lag_time_max_ms,
            fsync_before_acknowledging=log_.config.flush_policy == FLUSH_FSYNC,
            high_watermark=high_watermark,
            log_view=self.log_view(),
        )
        self._log_lock = asyncio.Lock()
        self.hw_moved = Signal()
        self.appended = Signal()
        self.log_starts_reported = Signal()
        """A follower fetch was recorded, with the follower's log start offset (``delete_records`` waits on it)."""
        self.generation = next(_GENERATIONS)
        """Changes with every change of the replica's state (each ``Ready`` performed) or of its
        log's ends; a fetch session skips a partition it found quiet at this generation
        (``fetch_session``). Values are never reused, even by another replica of the same partition."""
        self._quiet_watchers: dict[int, QuietWatcher] = {}
        """Per follower broker, the fetch session that found this replica quiet; stirred at the next change."""
        self._waiting: dict[Hashable, asyncio.Future[HighwaterError | None]] = {}
        self._request_ids = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline_ms = 0
        """When ``_timer`` fires (meaningful only while ``_timer`` is set)."""
        self._isr_task: asyncio.Task | None = None
        self._flush_tasks: set[asyncio.Task] = set()
        """Group commits the core asked for (``Ready.start_flush``), held until they report."""
        self._flush_backoff = Backoff(FLUSH_RETRY_INITIAL_S, FLUSH_RETRY_MAX_S)
        """The wait before a failed fsync is reported (and so asked again); reset by a good one."""
        self.log.transactions.on_high_watermark(high_watermark)
        self.transactional = TransactionalWrites(topic, partition, log_, transaction_calls)
        """What this leader verified of transactional producers (KIP-890); forgotten at every role change."""
        self._producers: ProducerStateManager | None = None
        self._min_insync_replicas = 0
        """The topic's ``min.insync.replicas`` as last given (0 before the first record)."""

    # ------------------------------------------------------------------ views

    @property
    def record(self) -> PartitionRecord | None:
        return self.core.record

    def throttles(self, replica_id: int) -> bool:
        """Whether ``replica_id``'s copy of this partition is throttled (``broker.replication.throttle``):
        the record says a move is adding it, and it is not in the ISR yet."""
        record = self.core.record
        return record is not None and is_throttled(replica_id, record.adding_replicas, record.isr)

    @property
    def leader_id(self) -> int:
        return self.core.leader_id

    @property
    def leader_epoch(self) -> int:
        return self.core.leader_epoch

    @property
    def is_leader(self) -> bool:
        return self.core.is_leader

    @property
    def high_watermark(self) -> int:
        return self.core.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """Below it every transaction is decided on every in-sync replica (``broker.storage.transactions``)."""
        return self.log.transactions.last_stable_offset(self.core.high_watermark)

    @property
    def latest_offset_available(self) -> bool:
        return self.core.latest_offset_available

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def log_view(self) -> LocalLogView:
        return LocalLogView(
            self.log.log_start_offset, self.log.log_end_offset, self.log.epoch_cache, self.log.recovery_point
        )

    def replicas_state(self) -> list[dict] | None:
        return self.core.replicas_state(self._clock_ms())

    def require_leader(self) -> PartitionLeaderState:
        return self.core.require_leader()

    def low_watermark(self) -> int:
        """The leader's low watermark (``PartitionLeaderState.low_watermark``); -1 on a replica that does not lead."""
        state = self.core.leader_state
        return state.low_watermark() if state is not None else -1

    def watch_quiet(self, replica_id: int, session: QuietWatcher) -> None:
        """``replica_id``'s fetch session found this replica quiet: its rounds count as the
        follower's fetches (``replica_state``) until the next change, which stirs it.

        One session per follower broker: a newer session of the same follower replaces the older.
        Invariant: a follower state follows some session's rounds only while that session
        is in ``_quiet_watchers``, so ``_changed`` stops every one of them.
        """
        self._quiet_watchers[replica_id] = session
        self.core.follow_fetch_rounds(replica_id, session.rounds)

    def unwatch_quiet(self, replica_id: int) -> None:
        """``replica_id``'s session forgot this replica: its rounds are no longer this follower's fetches."""
        if self._quiet_watchers.pop(replica_id, None) is not None:
            self.core.stop_following_fetch_rounds(replica_id)

    def _changed(self) -> None:
        """A new generation, and every session that found this replica quiet hears of it (once)."""
        self.generation = next(_GENERATIONS)
        if self._quiet_watchers:
            self.core.stop_following_fetch_rounds()
            watchers, self._quiet_watchers = self._quiet_watchers, {}
            key = (self.topic, self.partition)
            for session in watchers.values():
                session.stir(key)

    # ------------------------------------------------------- performing Ready

    def _perform(self, ready: Ready) -> None:
        """The synchronous parts of a ``Ready``; log actions are performed by their callers."""
        self._changed()
        if ready.assign_epoch is not None:
            self.log.assign_epoch(*ready.assign_epoch)
        if ready.role_changed:
            self._producers = None
            self.transactional.reset()
            if self._isr_task is not None:
                self._isr_task.cancel()
                self._isr_task = None
        for completion in ready.completions:
            future = self._waiting.pop(completion.request_id, None)
            if future is not None and not future.done():
                future.set_result(completion.error)
        if ready.start_flush:
            task = asyncio.create_task(self._flush_and_report(), name=f"hw-flush-{self.topic}-{self.partition}")
            self._flush_tasks.add(task)
            task.add_done_callback(self._flush_tasks.discard)
        if ready.propose_isr is not None:
            self._isr_task = asyncio.create_task(self._run_isr_proposal(ready.propose_isr))
        if ready.high_watermark_moved:
            self.log.transactions.on_high_watermark(self.high_watermark)
            trace("leader.hw_raised", topic=self.topic, partition=self.partition, high_watermark=self.high_watermark)
            self.hw_moved.notify()
        if ready.role_changed:
            self.appended.notify()
        if ready.next_deadline_ms is not None:
            self._schedule_tick(ready.next_deadline_ms)

    async def _flush_and_report(self) -> None:
        """One group-committed fsync (shared with the acks=all producers'), then its offset to the core.

        A failed fsync is reported too, with the recovery point it did not move, so the
        core may ask again; the error is the flusher's to log. It is reported after a
        back-off: a disk that failed every fsync at once had the core ask again at once,
        for ever, and the event loop spun (the seeded simulation's crashed disks do). A
        flush cancelled (the replica stopping) reports nothing, so it asks for no other.
        """
        try:
            await self._flusher.flush(self.log)
            self._flush_backoff.reset()
        except Exception:  # noqa: BLE001 - the flusher logs it; the report below lets the core ask again
            await asyncio.sleep(self._flush_backoff.next_delay())
        self._perform(self.core.on_flushed(self.log.recovery_point, self._clock_ms()))

    def _schedule_tick(self, deadline_ms: int) -> None:
        """One timer per partition, at the earliest deadline the core asked for."""
        if self._timer is not None:
            if self._timer_deadline_ms <= deadline_ms:
                return
            self._timer.cancel()
        self._timer_deadline_ms = deadline_ms
        self._timer = asyncio.get_running_loop().call_later(
            max(0, deadline_ms - self._clock_ms()) / 1000, self._on_timer
        )

    def _on_timer(self) -> None:
        self._timer = None
        self.tick()

    def tick(self) -> None:
        """Time-driven work (produce deadlines, the periodic ISR shrink check); safe to call any time.

        A tick that asks for nothing changed nothing a fetch session watches, so it leaves the
        generation alone: every partition ticks every half lag time, and each bump would make
        every quiet partition of every session be recorded again.
        """
        ready = self.core.tick(self._clock_ms())
        if ready != NOTHING:
            self._perform(ready)

    # ------------------------------------------------------------ role changes

    def apply_record(self, record: PartitionRecord, min_insync_replicas: int) -> None:
        """Follow the partition record (the core ignores records older than the one it holds)."""
        self._min_insync_replicas = min_insync_replicas
        self._perform(self.core.apply_record(record, min_insync_replicas, self.log_view(), self._clock_ms()))

    def apply_topic_config(self, log_config: LogConfig, min_insync_replicas: int) -> bool:
        """The topic record's configs changed: the log takes them from its next append or
        retention pass, the core from now (``PartitionReplica.apply_topic_config``).

        Returns whether anything differed from what the replica held."""
        changed = log_config != self.log.config or min_insync_replicas != self._min_insync_replicas
        self._min_insync_replicas = min_insync_replicas
        self.log.update_config(log_config)
        fsync = log_config.flush_policy == FLUSH_FSYNC
        self._perform(self.core.apply_topic_config(min_insync_replicas, fsync, self.log_view(), self._clock_ms()))
        return changed

    def end_long_polls(self) -> None:
        """The broker is stopping: every read and follower fetch waiting here answers now with what it has."""
        self.hw_moved.end()
        self.appended.end()
        self.log_starts_reported.end()
        self._changed()

    def stop(self) -> None:
        """The replica is going away (topic deleted, broker stopping)."""
        self._perform(self.core.stop())
        for task in self._flush_tasks:
            task.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # ------------------------------------------------------------ leader: produce

    async def append(
        self, batch: bytes | CheckedBatches, acks: Acks, timeout_ms: int, transactional_id: str | None = None
    ) -> AppendOutcome:
        """Append a producer's batch as leader; return once the batch meets ``acks``.

        A ``bytes`` batch is checked (headers, CRC) here, once, before the log lock;
        ``CheckedBatches`` were checked at the edge and are not checksummed again.
        A control batch is refused, and a transactional one is verified with its
        coordinator first (``transactional``, KIP-890): nothing of either is written.

        acks=all is refused before the append when the committed ISR is below min ISR
        (nothing written). acks=1 answers once the bytes are in the OS (never in a
        Python buffer). acks=all also waits for the fsync its flush policy asks for and
        for the HW to pass the batch with the maximal ISR holding min ISR.
        """
        checked = batch if isinstance(batch, CheckedBatches) else check_batches(batch)
        still_verified = await self.transactional.admit(checked, transactional_id)
        return await self._append_checked(checked, acks, timeout_ms, still_verified)

    async def write_marker(
        self, marker: TransactionMarker, serial: int, transactional_id: str, timeout_ms: int
    ) -> AppendOutcome:
        """Append the COMMIT or ABORT marker of transaction ``serial`` as leader, acks=all.

        Asked by the transaction coordinator once the outcome is durable. A stale marker
        (its transaction already ended here) is refused (``transactional.check_marker``).
        """
        self.require_leader()
        before_marker = await self.transactional.check_marker(marker, serial, transactional_id)
        checked = check_batches(encode_marker_batch(marker, self._clock_ms()))
        outcome = await self._append_checked(checked, Acks.ALL, timeout_ms, before_marker)
        log.info(
            "partition.marker_written",
            topic=self.topic,
            partition=self.partition,
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            committed=marker.committed,
            serial=serial,
            offset=outcome.base_offset,
        )
        if self._on_marker_written is not None:
            self._on_marker_written(self, marker)
        return outcome

    async def _append_checked(
        self, checked: CheckedBatches, acks: Acks, timeout_ms: int, under_lock: Callable[[], None] | None
    ) -> AppendOutcome:
        """The append itself, refused first when acks=all finds the ISR below min ISR (nothing written);
        ``under_lock`` runs under the log lock and may refuse it too."""
        acks_all = acks is Acks.ALL
        refusal = self.core.admit_produce(acks_all=acks_all)
        if refusal is not None:
            raise refusal
        loop = asyncio.get_running_loop()
        async with self._log_lock:
            leader_epoch = self.core.require_leader().leader_epoch
            if under_lock is not None:
                under_lock()
            start_ns = time.monotonic_ns()
            if self._leader_append_is_cheap(checked, leader_epoch):
                outcome = self._append_locked(checked, leader_epoch)
            else:
                outcome = await loop.run_in_executor(None, self._append_locked, checked, leader_epoch)
            trace(
                "leader.appended",
                topic=self.topic,
                partition=self.partition,
                offset=outcome.last_offset,
                leader_epoch=leader_epoch,
                start_ns=start_ns,
            )
            ready = self.core.on_appended(leader_epoch, self.log.log_end_offset, self._clock_ms(), acks_all=acks_all)
            self._perform(ready)
        self.appended.notify()
        if acks_all:
            if ready.flush_before_acknowledging:
                trace("leader.fsync_start", topic=self.topic, partition=self.partition, offset=outcome.last_offset)
                try:
                    await self._flusher.flush(self.log)
                finally:
                    trace("leader.fsync_end", topic=self.topic, partition=self.partition, offset=outcome.last_offset)
                    self._perform(self.core.on_flushed(self.log.recovery_point, self._clock_ms()))
            await self._wait_for_replicas(outcome.last_offset + 1, timeout_ms)
            trace("leader.acked", topic=self.topic, partition=self.partition, offset=outcome.last_offset)
        return outcome

    def _leader_append_is_cheap(self, batch: CheckedBatches, leader_epoch: int) -> bool:
        """Whether appending ``batch`` as leader only writes to the page cache.

        Not when it is large, when ``leader_epoch`` is new to the log (the append would
        write and fsync the epoch checkpoint) or when an idempotent batch needs the
        producer state loaded from the log first.
        """
        if len(batch.data) > INLINE_APPEND_MAX_BYTES or self.log.epoch_cache.latest_epoch != leader_epoch:
            return False
        return self._producers is not None or not any(is_idempotent(header) for header in batch.headers)

    def _append_locked(self, batch: CheckedBatches, leader_epoch: int) -> AppendOutcome:
        """Under the log lock, on the loop or in the executor: dedupe an idempotent retry, else append.

        A retried batch (same producer, epoch and sequences as one of the last five) is
        answered with its original offsets and not written again (KIP-98).
        """
        headers = batch.headers
        producers = None
        if any(is_idempotent(header) for header in headers):
            if len(headers) != 1:
                raise InvalidRequest("an idempotent produce carries exactly one record batch per partition")
            producers = self._producer_state()
            original = producers.find_duplicate(headers[0])
            if original is not None:
                log.info(
                    "produce.duplicate_ignored",
                    topic=self.topic,
                    partition=self.partition,
                    producer_id=headers[0].producer_id,
                    base_sequence=headers[0].base_sequence,
                    base_offset=original.base_offset,
                )
                return AppendOutcome(original.base_offset, original.last_offset, -1)
        info = self.log.append_as_leader(batch, leader_epoch, self._clock_ms())
        if producers is not None:
            producers.record(dataclasses.replace(headers[0], base_offset=info.base_offset))
        return AppendOutcome(info.base_offset, info.last_offset, info.log_append_time_ms)

    def _producer_state(self) -> ProducerStateManager:
        """Built from the log on first use in a leadership, so it holds what this log holds."""
        producers = self._producers
        if producers is None:
            producers = ProducerStateManager(self.topic, self.partition)
            producers.load(self.log.batch_headers())
            self._producers = producers
        return producers

    async def active_producers(self) -> list[ActiveProducer]:
        """The producers this leader knows (Kafka's DescribeProducers): idempotent ones from the
        producer state (loaded in the executor on first use), with the first offset of the
        transaction each has open here, if any."""
        self.require_leader()
        async with self._log_lock:  # the appends build and feed the same producer state under it
            producers = self._producers
            if producers is None:
                producers = await asyncio.get_running_loop().run_in_executor(None, self._producer_state)
            known = producers.producers()
        opened = {txn.producer_id: txn for txn in self.log.transactions.open_transactions}
        found = {
            pid: ActiveProducer(pid, epoch, sequence, opened[pid].first_offset if pid in opened else -1)
            for pid, epoch, sequence in known
        }
        for pid, txn in opened.items():
            found.setdefault(pid, ActiveProducer(pid, txn.producer_epoch, -1, txn.first_offset))
        return [found[pid] for pid in sorted(found)]

    async def _wait_for_replicas(self, required_offset: int, timeout_ms: int) -> None:
        request_id = next(self._request_ids)
        future: asyncio.Future[HighwaterError | None] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._perform(self.core.await_replication(request_id, required_offset, self._clock_ms() + timeout_ms))
        error = await future
        if error is not None:
            raise error

    # --------------------------------------------------------------- leader: ISR

    async def _run_isr_proposal(self, proposal: ProposeIsr) -> None:
        """One change in flight per partition; the core decides what the answer means.

        A change that got no answer is asked again, unchanged, until one comes (Kafka's
        AlterPartition manager retries the same way): giving it up would drop replicas
        the controller may have added from the maximal ISR. A newer partition record
        resolves the change meanwhile and ends the asking.
        """
        backoff = Backoff(ISR_RETRY_INITIAL_S, ISR_RETRY_MAX_S)
        while (answer := await self._propose_isr(proposal)) is None:
            await asyncio.sleep(backoff.next_delay())
            if self.core.isr_in_flight != proposal:
                return
        self._perform(self.core.on_isr_result(proposal, answer, self._clock_ms()))

    def on_log_start_advanced(self) -> None:
        """Retention deleted segments: a leader's log start follows the log's."""
        self.core.on_log_start_advanced(self.log.log_start_offset)
        self._changed()

    async def _advance_log_start(self, offset: int) -> bool:
        """Raise the log start to ``offset`` and write it durably before going on; whether it moved.

        The one way a log start moves because records were deleted: on the leader by
        DeleteRecords, on a follower when it follows its leader's (before its next fetch
        reports it). So a delete answered once every in-sync replica followed cannot come
        back after a crash, whichever replica leads next. (Retention moves a leader's log
        start too; that is no promise to anyone, and the periodic checkpoint keeps it.)
        """
        loop = asyncio.get_running_loop()
        moved = await loop.run_in_executor(None, self.log.advance_log_start_offset, offset)
        if moved and self._checkpoint_log_starts is not None:
            await loop.run_in_executor(None, self._checkpoint_log_starts)
        return moved

    async def delete_records(self, before_offset: int, timeout_ms: int) -> int:
        """Kafka's DeleteRecords on the leader: every record below ``before_offset`` goes; the low watermark.

        ``before_offset`` -1 means the high watermark (Kafka's ``HIGH_WATERMARK``); past
        the high watermark it is refused (``OFFSET_OUT_OF_RANGE``), below the log start it
        changes nothing. The log start moves at once (readers below it get
        ``OFFSET_OUT_OF_RANGE``) and the segments wholly below it are deleted; the
        followers follow it through their fetches (each answer carries it), and the call
        returns once every in-sync replica's log start reached it: the low watermark,
        at least ``before_offset``. If they have not within ``timeout_ms``:
        ``REQUEST_TIMED_OUT``, the records gone from the leader all the same (as Kafka).
        """
        state = self.require_leader()
        high_watermark = state.high_watermark
        target = high_watermark if before_offset == DELETE_TO_HIGH_WATERMARK else before_offset
        if not 0 <= target <= high_watermark:
            raise OffsetOutOfRange(
                f"cannot delete the records of {self.topic}-{self.partition} before offset {before_offset}: "
                f"past the high watermark {high_watermark}",
                log_start_offset=self.log.log_start_offset,
                high_watermark=high_watermark,
            )
        loop = asyncio.get_running_loop()
        if await self._advance_log_start(target):
            self.on_log_start_advanced()
            deleted = await loop.run_in_executor(None, self.log.delete_segments_below_log_start)
            log.info(
                "partition.records_deleted",
                topic=self.topic,
                partition=self.partition,
                log_start_offset=self.log.log_start_offset,
                high_watermark=high_watermark,
                segments_deleted=deleted,
            )
        deadline = loop.time() + timeout_ms / 1000
        while True:
            waiter = self.log_starts_reported.waiter()
            try:
                low_watermark = self.require_leader().low_watermark()
                remaining = deadline - loop.time()
                if low_watermark >= target:
                    return low_watermark
                if remaining <= 0 or self.log_starts_reported.ended:
                    raise RequestTimedOut(
                        f"the log start of {self.topic}-{self.partition} moved to {target} on the leader, but the "
                        f"in-sync replicas had not all followed within {timeout_ms} ms (low watermark {low_watermark})",
                        low_watermark=low_watermark,
                    )
                await wait_event(waiter, remaining)
            finally:
                self.log_starts_reported.unregister(waiter)

    # ----------------------------------------------------------- leader: reads

    async def read(
        self, offset: int, max_bytes: int, timeout_ms: int, isolation: Isolation = Isolation.READ_UNCOMMITTED
    ) -> ReadResult:
        """Whole batches from ``offset`` below the HW (the LSO for ``read_committed``); long-poll up to
        ``timeout_ms`` for some. The LSO moves only when the HW does or a marker is appended, and
        a marker's append is followed by the HW passing it, so the HW's signal wakes both.

        A caught-up reader (``offset`` at the visible end when it asks) reads on the event loop,
        at most ``TAIL_READ_MAX_BYTES``: what it gets was appended while it waited, still in the
        page cache, as a caught-up follower's fetch does. A reader behind may read cold data:
        the executor."""
        self.require_leader()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        at_tail = offset >= isolation.visible_end(self.high_watermark, self.last_stable_offset)
        while True:
            waiter = self.hw_moved.waiter()
            try:
                bound = isolation.visible_end(self.high_watermark, self.last_stable_offset)
                result = await self.read_log(offset, max_bytes, bound, at_tail=at_tail)
                remaining = deadline - loop.time()
                if result.data or remaining <= 0 or self.hw_moved.ended:
                    return result
                await wait_event(waiter, remaining)
            finally:
                self.hw_moved.unregister(waiter)
            self.require_leader()

    async def read_log(self, offset: int, max_bytes: int, bound: int | None, *, at_tail: bool) -> ReadResult:
        """``log.read`` where it belongs: on the event loop for a reader that started at the end
        (``at_tail``), at most ``TAIL_READ_MAX_BYTES`` of what was appended while it waited, still
        in the page cache; in the executor for a reader behind, which may read cold data."""
        if at_tail:
            return self.log.read(offset, min(max_bytes, TAIL_READ_MAX_BYTES), bound)
        return await asyncio.get_running_loop().run_in_executor(None, self.log.read, offset, max_bytes, bound)

    def record_follower_fetch(
        self, fields: FetchRequestFields, *, broker_epoch: int, registered_broker_epoch: int
    ) -> FetchOutcome:
        """Validate and record one partition of a follower fetch (state only, no disk).

        ``broker_epoch`` is the one the fetch carries, ``registered_broker_epoch`` the
        one this broker's metadata holds for the follower (KIP-903)."""
        outcome, ready = self.core.on_follower_fetch(
            fields,
            broker_epoch=broker_epoch,
            registered_broker_epoch=registered_broker_epoch,
            log_view=self.log_view(),
            now_ms=self._clock_ms(),
        )
        self._perform(ready)
        if self.log_starts_reported.waiting:
            self.log_starts_reported.notify()
        return outcome

    def record_repeated_follower_fetch(
        self,
        replica_id: int,
        fetch_offset: int,
        current_leader_epoch: int,
        *,
        broker_epoch: int,
        registered_broker_epoch: int,
    ) -> bool:
        """A session fetch that repeats the follower's previous one; False: call ``record_follower_fetch``.

        Takes the few fields it needs, not a ``FetchRequestFields``: the leader makes this
        call for every unchanged partition of a session each round.
        """
        return self.core.on_repeated_follower_fetch(
            replica_id,
            fetch_offset,
            current_leader_epoch,
            broker_epoch=broker_epoch,
            registered_broker_epoch=registered_broker_epoch,
            now_ms=self._clock_ms(),
        )

    # ---------------------------------------------------------------- follower

    async def fetch_request(self) -> FetchRequestFields | None:
        """What to fetch from the leader next, or None while this replica must not fetch.

        Under the ``fsync`` policy a tail the log never fsynced is fsynced first: the
        fetch offset tells the leader everything below it is held here.
        """
        if self.core.must_flush_before_fetching(self.log_view()):
            await asyncio.get_running_loop().run_in_executor(None, self.log.flush)
        return self.core.fetch_request(self.log_view())

    async def apply_fetch_response(
        self, sent: FetchRequestFields, response: PartitionFetchResponse, records: bytes, *, lone: bool = False
    ) -> bool:
        """Perform what the core makes of the leader's answer; True when fetching should back off.

        ``lone``: this partition was the only one of its fetch answer, so a small answer's
        fsync may run on the event loop (``INLINE_FLUSH_MAX_BYTES``).

        Under the ``fsync`` policy the appended records are fsynced before this returns,
        so before the next fetch tells the leader they are here (the leader raises the
        HW on it; without the fsync a power loss on the followers drops acknowledged
        records — found by tests/simulation).

        The order is append, fsync, then (back in the fetcher) the next fetch at once,
        Kafka's fetch-again-immediately with the fsync in between. The fetch offset is
        all the leader learns, so it cannot run ahead of the fsync. Fetching before
        the fsync and reporting a durable offset separately saves nothing for a lone
        produce: the only request in flight is then parked at the leader, so the
        durable offset would reach it one more round trip later. What is overlapped
        is the leader's own fsync, submitted right after its append, beside the
        fetch the append woke (``GroupCommitFlusher``).
        """
        ready = self.core.on_fetch_response(sent, response, self.log_view())
        loop = asyncio.get_running_loop()
        for action in ready.log_actions:
            if isinstance(action, AppendRecords):
                await self._append_as_follower(records, action.expected_base_offset)
                trace(
                    "follower.appended",
                    topic=self.topic,
                    partition=self.partition,
                    offset=self.log.log_end_offset - 1,
                    leader_epoch=sent.current_leader_epoch,
                )
            elif isinstance(action, TruncateTo):
                async with self._log_lock:
                    await loop.run_in_executor(None, self.log.truncate_to, action.offset)
                self.core.on_log_truncated(self.log.log_end_offset)
            elif isinstance(action, TruncateFullyAndStartAt):
                async with self._log_lock:
                    await loop.run_in_executor(None, self.log.truncate_fully_and_start_at, action.offset)
            elif isinstance(action, UpdateFollowerOffsets) and action.log_start_offset > self.log.log_start_offset:
                await self._advance_log_start(action.log_start_offset)
        if ready.flush:
            if lone and len(records) <= self._inline_flush_max_bytes and self._inline_fsync.allows(self._clock_ms()):
                self._flush_on_loop()
            else:
                await loop.run_in_executor(None, self.log.flush)
            trace("follower.fsynced", topic=self.topic, partition=self.partition, offset=self.log.recovery_point - 1)
        self._perform(ready)
        return ready.backoff

    def _flush_on_loop(self) -> None:
        """fsync on the event loop, timed with ``fsync_timer`` for ``InlineFsyncGuard``."""
        started = self._fsync_timer()
        self.log.flush()
        held_ms = (self._fsync_timer() - started) * 1000
        average_ms = self._inline_fsync.record(held_ms, self._clock_ms())
        if average_ms is not None:
            log.warning(
                "follower_inline_fsync_slow",
                topic=self.topic,
                partition=self.partition,
                held_ms=round(held_ms, 3),
                average_ms=round(average_ms, 3),
                executor_for_ms=PAUSE_MS,
            )

    async def _append_as_follower(self, records: bytes, expected_base_offset: int) -> None:
        loop = asyncio.get_running_loop()
        async with self._log_lock:
            if self.log.log_end_offset != expected_base_offset:
                raise OffsetOutOfRange(
                    f"fetched records for {self.topic}-{self.partition} start at {expected_base_offset}, "
                    f"the log ends at {self.log.log_end_offset}",
                    log_start_offset=self.log.log_start_offset,
                    log_end_offset=self.log.log_end_offset,
                )
            checked = check_batches(records)
            if _follower_append_is_cheap(checked, self.log.epoch_cache.latest_epoch):
                self.log.append_as_follower(checked)
            else:
                await loop.run_in_executor(None, self.log.append_as_follower, checked)


def _follower_append_is_cheap(checked: CheckedBatches, latest_epoch: int) -> bool:
    """Whether a follower append of ``checked`` only writes to the page cache.

    Not when it is large, or when a batch carries an epoch newer than the log's latest:
    the append would then write and fsync the epoch checkpoint.
    """
    if len(checked.data) > INLINE_APPEND_MAX_BYTES:
        return False
    return all(header.partition_leader_epoch <= latest_epoch for header in checked.headers)
