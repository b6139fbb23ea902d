"""One partition replica on this broker: its log, its role, and the high watermark.

The ``Partition`` is the async driver around two pure pieces: the storage
``PartitionLog`` and, by role, the replication state machine
(``PartitionLeaderState`` or ``FollowerState``). It performs what they ask: disk work
in the default executor (the event loop never blocks on a write or an fsync), HW
rises that wake acks=all produces and long-poll reads, ISR proposals sent to the
metadata store.

One task at a time owns the state: everything runs on the event loop, and an
``asyncio.Lock`` (``_log_lock``) serialises every log mutation — leader appends,
follower appends and truncations — so offsets are assigned in admission order.
Reads run concurrently.

Visibility rule (the reason the project exists): readers get only records below the
high watermark. Invariant: ``log_start_offset <= high_watermark <= log_end_offset``;
on a leader the high watermark never moves back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass

import structlog

from broker.acks import Acks
from broker.cluster.records import PartitionRecord
from broker.errors import HighwaterError, InvalidRequest, NotLeaderOrFollower, OffsetOutOfRange
from broker.partition_signal import Signal
from broker.record.header import iter_batches
from broker.replication import (
    DelayedProducePurgatory,
    FetchOutcome,
    FollowerState,
    HwUpdate,
    PartitionLeaderState,
    ProposeIsr,
)
from broker.storage import GroupCommitFlusher, PartitionLog, ReadResult
from broker.storage.producer_state import ProducerStateManager, is_idempotent
from broker.waiting import wait_event

log = structlog.get_logger(__name__)

IsrProposer = Callable[[ProposeIsr], Awaitable["PartitionRecord | None"]]
"""Writes an ISR change as compare-and-set; returns the committed record or None if refused."""


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    base_offset: int
    last_offset: int
    log_append_time_ms: int


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
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.log = log_
        self._flusher = flusher
        self.local_broker_id = local_broker_id
        self._lag_time_max_ms = replica_lag_time_max_ms
        self._propose_isr = propose_isr
        self.record: PartitionRecord | None = None
        self.leader_state: PartitionLeaderState | None = None
        self.follower_state: FollowerState | None = None
        self._high_watermark = max(log_.log_start_offset, min(high_watermark, log_.log_end_offset))
        self._log_lock = asyncio.Lock()
        self.hw_moved = Signal()
        self.appended = Signal()
        self._purgatory = DelayedProducePurgatory(topic, partition)
        # Keyed as the purgatory keys its waiters (this partition's ids are ints).
        self._waiting: dict[Hashable, asyncio.Future[HighwaterError | None]] = {}
        self._request_ids = itertools.count()
        self._expiry_task: asyncio.Task | None = None
        self._isr_task: asyncio.Task | None = None
        self._producers: ProducerStateManager | None = None

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
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def replicas_state(self) -> list[dict] | None:
        return self.leader_state.replicas_state(now_ms()) if self.leader_state else None

    # ------------------------------------------------------------ role changes

    def apply_record(self, record: PartitionRecord, min_insync_replicas: int) -> None:
        """Follow the partition record: become leader, follower, or take an ISR change.

        Records older than the one applied (by leader epoch, then partition epoch)
        are ignored, so the role only ever moves forward in epoch order.
        """
        current = self.record
        if current is not None and (record.leader_epoch, record.partition_epoch) <= (
            current.leader_epoch,
            current.partition_epoch,
        ):
            return
        self.record = record
        same_epoch = current is not None and record.leader_epoch == current.leader_epoch
        if record.leader == self.local_broker_id:
            if same_epoch and self.leader_state is not None:
                self._on_hw_update(
                    self.leader_state.on_isr_change_committed(record.isr, record.partition_epoch, now_ms())
                )
            else:
                self._become_leader(record, min_insync_replicas)
        elif not (same_epoch and self.follower_state is not None):
            self._become_follower(record)

    def _become_leader(self, record: PartitionRecord, min_insync_replicas: int) -> None:
        """Kafka ``makeLeader``: record (epoch, LEO) in the epoch cache first (KIP-101)."""
        self._resign_leadership(record.leader)
        self._remember_high_watermark()
        self.follower_state = None
        self._producers = None
        self.log.assign_epoch(record.leader_epoch, self.log.log_end_offset)
        epoch_start = self.log.epoch_cache.start_offset_of(record.leader_epoch)
        self.leader_state = PartitionLeaderState(
            topic=self.topic,
            partition=self.partition,
            local_broker_id=self.local_broker_id,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            replicas=record.replicas,
            isr=record.isr,
            min_insync_replicas=min_insync_replicas,
            log_start_offset=self.log.log_start_offset,
            log_end_offset=self.log.log_end_offset,
            high_watermark=self._high_watermark,
            leader_epoch_start_offset=self.log.log_end_offset if epoch_start is None else epoch_start,
            replica_lag_time_max_ms=self._lag_time_max_ms,
            now_ms=now_ms(),
        )
        log.info(
            "partition.became_leader",
            topic=self.topic,
            partition=self.partition,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            isr=record.isr,
            log_end_offset=self.log_end_offset,
            high_watermark=self.high_watermark,
        )
        self.hw_moved.notify()

    def _become_follower(self, record: PartitionRecord) -> None:
        """Kafka ``makeFollower``: no truncation here; the first fetch's epoch check decides."""
        self._resign_leadership(record.leader)
        self._remember_high_watermark()
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
            log_end_offset=self.log_end_offset,
            high_watermark=self._high_watermark,
        )
        self.hw_moved.notify()
        self.appended.notify()

    def _remember_high_watermark(self) -> None:
        self._high_watermark = self.high_watermark

    def _resign_leadership(self, new_leader_id: int) -> None:
        """A deposed leader stops acknowledging at once: every waiting acks=all fails."""
        if self.leader_state is None:
            return
        self._remember_high_watermark()
        self.leader_state = None
        for completion in self._purgatory.fail_all_not_leader(new_leader_id):
            self._complete(completion.request_id, completion.error)
        for task in (self._expiry_task, self._isr_task):
            if task is not None:
                task.cancel()
        self._expiry_task = self._isr_task = None

    def stop(self) -> None:
        """The replica is going away (topic deleted, broker stopping)."""
        self._resign_leadership(-1)
        self.follower_state = None
        self.hw_moved.notify()
        self.appended.notify()

    # ------------------------------------------------------------ leader: produce

    def require_leader(self) -> PartitionLeaderState:
        if self.leader_state is None:
            raise NotLeaderOrFollower(
                f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.partition}",
                leader_id=self.leader_id,
                topic=self.topic,
                partition=self.partition,
            )
        return self.leader_state

    async def append(self, batch: bytes, acks: Acks, timeout_ms: int) -> AppendOutcome:
        """Append as leader; return once the batch meets ``acks``.

        acks=all is refused before the append when the committed ISR is below min ISR
        (nothing written). acks=1 answers once the bytes are in the OS (never in a
        Python buffer). acks=all also waits for the fsync its flush policy asks for and
        for the HW to pass the batch with the maximal ISR holding min ISR.
        """
        state = self.require_leader()
        if acks is Acks.ALL:
            refusal = state.check_produce_admission()
            if refusal is not None:
                raise refusal
        loop = asyncio.get_running_loop()
        async with self._log_lock:
            state = self.require_leader()
            outcome = await loop.run_in_executor(None, self._append_locked, batch, state.leader_epoch)
            if self.leader_state is state:
                self._on_hw_update(state.on_leader_append(self.log.log_end_offset, now_ms()))
        self.appended.notify()
        if acks is Acks.ALL:
            await self._flusher.flush_for_ack(self.log)
            await self._wait_for_replicas(outcome.last_offset + 1, timeout_ms)
        return outcome

    def _append_locked(self, batch: bytes, leader_epoch: int) -> AppendOutcome:
        """In the executor, under the log lock: dedupe an idempotent retry, else append.

        A retried batch (same producer, epoch and sequences as one of the last five) is
        answered with its original offsets and not written again (KIP-98).
        """
        headers = list(iter_batches(batch))
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
        info = self.log.append_as_leader(batch, leader_epoch, now_ms())
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

    async def _wait_for_replicas(self, required_offset: int, timeout_ms: int) -> None:
        state = self.require_leader()
        request_id = next(self._request_ids)
        future: asyncio.Future[HighwaterError | None] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._purgatory.add(request_id, required_offset, now_ms() + timeout_ms)
        self._complete_produces(state)
        self._schedule_expiry()
        error = await future
        if error is not None:
            raise error

    def _complete(self, request_id: Hashable, error: HighwaterError | None) -> None:
        future = self._waiting.pop(request_id, None)
        if future is not None and not future.done():
            future.set_result(error)

    def _complete_produces(self, state: PartitionLeaderState) -> None:
        completions = self._purgatory.on_high_watermark(
            state.high_watermark, len(state.maximal_isr), state.effective_min_isr
        )
        for completion in completions:
            self._complete(completion.request_id, completion.error)

    def _schedule_expiry(self) -> None:
        if self._expiry_task is None or self._expiry_task.done():
            self._expiry_task = asyncio.create_task(self._expire_produces())

    async def _expire_produces(self) -> None:
        while (deadline := self._purgatory.next_deadline_ms()) is not None:
            await asyncio.sleep(max(0, deadline - now_ms()) / 1000)
            for completion in self._purgatory.expire(now_ms()):
                self._complete(completion.request_id, completion.error)

    def _on_hw_update(self, update: HwUpdate | None) -> None:
        if update is None or self.leader_state is None:
            return
        self._complete_produces(self.leader_state)
        self.hw_moved.notify()

    # --------------------------------------------------------------- leader: ISR

    def maybe_shrink_isr(self) -> None:
        """Periodic check (every lag time / 2): propose removing followers that lag."""
        if self.leader_state is not None:
            self._send_isr_proposal(self.leader_state.check_isr_shrink(now_ms()))

    def _send_isr_proposal(self, proposal: ProposeIsr | None) -> None:
        if proposal is not None:
            self._isr_task = asyncio.create_task(self._run_isr_proposal(proposal))

    async def _run_isr_proposal(self, proposal: ProposeIsr) -> None:
        """One change in flight per partition; a refused CAS drops it (the watch brings news)."""
        committed = await self._propose_isr(proposal)
        state = self.leader_state
        if state is None or state.leader_epoch != proposal.leader_epoch:
            return
        if committed is None:
            self._on_hw_update(state.on_isr_change_rejected(proposal, now_ms()))
        elif self.record is None or committed.partition_epoch > self.record.partition_epoch:
            self.record = committed
            self._on_hw_update(state.on_isr_change_committed(committed.isr, committed.partition_epoch, now_ms()))

    # ----------------------------------------------------------- leader: reads

    async def read(self, offset: int, max_bytes: int, timeout_ms: int) -> ReadResult:
        """Whole batches from ``offset`` below the HW; long-poll up to ``timeout_ms`` for some."""
        self.require_leader()
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            waiter = self.hw_moved.waiter()
            try:
                result = await loop.run_in_executor(None, self.log.read, offset, max_bytes, self.high_watermark)
                remaining = deadline - time.monotonic()
                if result.data or remaining <= 0:
                    return result
                await wait_event(waiter, remaining)
            finally:
                self.hw_moved.unregister(waiter)
            self.require_leader()

    def read_for_follower(
        self,
        replica_id: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        current_leader_epoch: int,
        *,
        broker_epoch: int,
        registered_broker_epoch: int,
    ) -> FetchOutcome:
        """Validate and record one partition of a follower fetch (state only, no disk).

        ``broker_epoch`` is the one the fetch carries, ``registered_broker_epoch`` the
        one this broker's metadata holds for ``replica_id`` (KIP-903)."""
        state = self.require_leader()
        outcome = state.on_follower_fetch(
            replica_id,
            fetch_offset,
            now_ms(),
            last_fetched_epoch=last_fetched_epoch,
            current_leader_epoch=current_leader_epoch,
            epoch_cache=self.log.epoch_cache,
            broker_epoch=broker_epoch,
            registered_broker_epoch=registered_broker_epoch,
        )
        self._on_hw_update(outcome.hw_update)
        self._send_isr_proposal(outcome.propose_isr)
        return outcome

    # ---------------------------------------------------------------- follower

    async def truncate_to(self, offset: int) -> None:
        loop = asyncio.get_running_loop()
        async with self._log_lock:
            await loop.run_in_executor(None, self.log.truncate_to, offset)

    async def truncate_fully_and_start_at(self, offset: int) -> None:
        loop = asyncio.get_running_loop()
        async with self._log_lock:
            await loop.run_in_executor(None, self.log.truncate_fully_and_start_at, offset)

    async def append_as_follower(self, records: bytes, expected_base_offset: int) -> None:
        loop = asyncio.get_running_loop()
        async with self._log_lock:
            if self.log.log_end_offset != expected_base_offset:
                raise OffsetOutOfRange(
                    f"fetched records for {self.topic}-{self.partition} start at {expected_base_offset}, "
                    f"the log ends at {self.log.log_end_offset}",
                    log_start_offset=self.log.log_start_offset,
                    log_end_offset=self.log.log_end_offset,
                )
            await loop.run_in_executor(None, self.log.append_as_follower, records)

    async def advance_log_start_offset(self, offset: int) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.log.advance_log_start_offset, offset)
