"""``Fetcher``: one worker task per assigned partition keeps the next fetch in flight.

Each worker loops: set the position if it needs a reset, check the log after a leader
change, wait for buffer room, fetch raw batches from the leader (long-polling
``fetch_max_wait_ms``), queue the answer, and go again at once. So while the
application works through one answer, the next one is already on its way (pipelined).
Only the worker of a partition fetches it, so its answers arrive in offset order.

Memory is bounded: a worker fetches only while the queued answers plus the fetches in
flight (each reserved at its ``max_bytes``) fit in ``fetch_max_bytes`` (one fetch may
always run), and at most ``MAX_QUEUED_FETCHES_PER_PARTITION`` answers per partition
wait unread.

``seek`` and resets restart the partition's worker (a long-poll in flight is cancelled)
and bump the partition's generation, so queued answers for the old position are
dropped unread. Errors: retriable ones (leader moved, broker unreachable) and, as in
Kafka, an unknown topic or partition (it may be being created or re-created) refresh
metadata and retry after ``retry_backoff_ms``; an unknown one is also a suspicion for
``UnknownTopics``, which ``getmany`` confirms and raises. ``OFFSET_OUT_OF_RANGE`` and
truncation reset per ``auto_offset_reset`` or, with ``none``, are raised to the
application from its next ``getmany`` and park the worker until the application seeks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from broker.client.http import ClusterClient
from broker.client.library_log import library_logger
from broker.client.types import PartitionOffsets, TopicPartition
from broker.clock import monotonic_ms
from broker.errors import (
    HighwaterError,
    LeaderNotAvailable,
    OffsetOutOfRange,
    UnknownPartition,
    UnknownTopicOrPartition,
)
from broker.isolation import Isolation
from broker.record.header import read_header
from broker.waiting import wait_event
from consumer.errors import (
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
)
from consumer.fetch_buffer import CompletedFetch
from consumer.positions import SubscriptionState
from consumer.records import ConsumerRecord
from consumer.truncation import Truncation, check_position
from consumer.unknown_topics import UnknownTopics

log = library_logger(__name__)

MAX_QUEUED_FETCHES_PER_PARTITION = 2

CommittedOffsetLookup = Callable[[TopicPartition], Awaitable[int | None]]
"""The group's committed offset of a partition (``None``: never committed)."""


def latest_offset(offsets: PartitionOffsets, isolation: Isolation) -> int:
    """ "Latest" as the reader sees it: the HW, or the last stable offset for ``read_committed`` (as Kafka's)."""
    return isolation.visible_end(offsets.latest_offset, offsets.last_stable_offset)


class _Parked(Exception):
    """The worker stops until the application seeks (its error waits for ``getmany``)."""


@dataclass(frozen=True, slots=True)
class FetchLimits:
    fetch_max_bytes: int
    max_partition_fetch_bytes: int
    fetch_max_wait_ms: int
    retry_backoff_ms: int

    @property
    def request_max_bytes(self) -> int:
        return min(self.fetch_max_bytes, self.max_partition_fetch_bytes)


class Fetcher:
    def __init__(
        self,
        client: ClusterClient,
        subscriptions: SubscriptionState,
        limits: FetchLimits,
        unknown: UnknownTopics,
        committed_offset: CommittedOffsetLookup | None = None,
        isolation: Isolation = Isolation.READ_UNCOMMITTED,
    ) -> None:
        self._client = client
        self._isolation = isolation
        self._unknown = unknown
        self._committed_offset = committed_offset
        self._subscriptions = subscriptions
        self._limits = limits
        self._workers: dict[TopicPartition, asyncio.Task[None]] = {}
        self._ready: deque[CompletedFetch] = deque()
        self._queued: dict[TopicPartition, int] = {}
        self._next_fetch_offset: dict[TopicPartition, int] = {}
        self._errors: list[Exception] = []
        self._parked: set[TopicPartition] = set()
        self.buffered_bytes = 0
        self._reserved_bytes = 0
        self._data_ready = asyncio.Event()
        self._room_freed = asyncio.Event()
        self.fetches_completed = 0

    # ------------------------------------------------------------------ workers

    def sync_workers(self) -> None:
        """Start workers for newly assigned partitions, stop those of partitions no longer assigned."""
        assigned = set(self._subscriptions.assigned())
        for tp in list(self._workers):
            if tp not in assigned:
                self._stop_worker(tp)
        for tp in assigned:
            if tp not in self._workers and tp not in self._parked:
                self._workers[tp] = asyncio.get_running_loop().create_task(self._run(tp), name=f"fetch-{tp}")

    def restart(self, tp: TopicPartition) -> None:
        """After a seek or reset of ``tp``: drop what was fetched for it and fetch from the new position."""
        self._parked.discard(tp)
        self._stop_worker(tp)
        self.sync_workers()

    def _stop_worker(self, tp: TopicPartition) -> None:
        worker = self._workers.pop(tp, None)
        if worker is not None:
            worker.cancel()
        self._next_fetch_offset.pop(tp, None)
        for completed in [c for c in self._ready if c.tp == tp]:
            self._release(completed)

    async def close(self) -> None:
        workers = list(self._workers.values())
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        self._workers.clear()

    async def _run(self, tp: TopicPartition) -> None:
        while True:
            try:
                await self._step(tp)
            except _Parked:
                return
            except OffsetOutOfRange as error:
                if not self._on_out_of_range(tp, error):
                    return
            except HighwaterError as error:
                if not (error.retriable or isinstance(error, UnknownTopicOrPartition)):
                    self._fail(error)
                    return
                if isinstance(error, UnknownTopicOrPartition) and self._unknown.suspect(tp):
                    self._data_ready.set()
                self._client.metadata.mark_stale(tp.topic)
                log.debug("fetch_retry topic=%s partition=%d error=%s", tp.topic, tp.partition, error.name)
                await asyncio.sleep(self._limits.retry_backoff_ms / 1000)
            except Exception as error:
                log.warning("fetch_worker_failed topic=%s partition=%d", tp.topic, tp.partition, exc_info=True)
                self._fail(error)
                return

    async def _step(self, tp: TopicPartition) -> None:
        state = self._subscriptions.state(tp)
        generation = state.generation
        if state.pending_reset is not None:
            await self.reset_position(tp)
            return
        leader_url = await self._leader_url(tp)
        if state.awaiting_validation:
            await self._validate(tp, leader_url, generation)
            return
        await self._wait_for_room(tp)
        assert state.position is not None
        offset = self._next_fetch_offset.get(tp, state.position)
        max_bytes = self._limits.request_max_bytes
        self._reserved_bytes += max_bytes
        try:
            result = await self._client.fetch(
                leader_url, tp, offset, max_bytes, self._limits.fetch_max_wait_ms, self._isolation
            )
        finally:
            self._reserved_bytes -= max_bytes
            self._room_freed.set()
        if state.generation != generation:
            return
        self.fetches_completed += 1
        bound = self._isolation.visible_end(result.high_watermark, result.last_stable_offset)
        self._subscriptions.update_offsets(tp, bound, result.log_start_offset)
        if result.data:
            self._ready.append(CompletedFetch(tp, generation, offset, result, self._isolation.committed))
            self._queued[tp] = self._queued.get(tp, 0) + 1
            self.buffered_bytes += len(result.data)
            self._next_fetch_offset[tp] = max(offset, result.next_offset)
            self._data_ready.set()

    async def _leader_url(self, tp: TopicPartition) -> str:
        metadata = self._client.metadata
        if metadata.needs_refresh(tp.topic, monotonic_ms(), self._client.metadata_max_age_ms):
            await self._client.refresh_topic(tp.topic)
        info = metadata.partition(tp)
        if info is None:
            raise UnknownPartition(f"{tp.topic}-{tp.partition} does not exist", topic=tp.topic, partition=tp.partition)
        self._unknown.found(tp)
        leader_url = metadata.leader_url(tp)
        if leader_url is None:
            raise LeaderNotAvailable(f"{tp.topic}-{tp.partition} has no leader right now")
        if self._subscriptions.observe_leader_epoch(tp, info.leader_epoch):
            log.debug(
                "consumer_leader_changed topic=%s partition=%d leader_epoch=%d",
                tp.topic,
                tp.partition,
                info.leader_epoch,
            )
        return leader_url

    async def _wait_for_room(self, tp: TopicPartition) -> None:
        limit = self._limits.fetch_max_bytes
        request_bytes = self._limits.request_max_bytes
        while True:
            in_use = self.buffered_bytes + self._reserved_bytes
            if self._queued.get(tp, 0) < MAX_QUEUED_FETCHES_PER_PARTITION and (
                in_use == 0 or in_use + request_bytes <= limit
            ):
                return
            self._room_freed.clear()
            await self._room_freed.wait()

    # ------------------------------------------------------------------ positions

    async def reset_position(self, tp: TopicPartition) -> None:
        """Set a pending position: the group's committed offset, else the log's start or HW (``none``: raise)."""
        state = self._subscriptions.state(tp)
        strategy, generation = state.pending_reset, state.generation
        if strategy is None:
            return
        if state.from_committed and self._committed_offset is not None:
            committed = await self._committed_offset(tp)
            if committed is not None:
                if self._subscriptions.complete_reset(tp, committed, generation):
                    log.debug(
                        "consumer_position_from_committed topic=%s partition=%d offset=%d",
                        tp.topic,
                        tp.partition,
                        committed,
                    )
                return
            if state.generation != generation:
                return
            self._subscriptions.no_committed_offset(tp)
        if strategy == "none":
            error = NoOffsetForPartitionError(
                f"{tp.topic}-{tp.partition} has no position and auto_offset_reset is 'none'; seek first",
                topic=tp.topic,
                partition=tp.partition,
            )
            self._fail(error)
            raise _Parked from None
        offsets = await self._client.list_offsets(tp)
        offset = offsets.earliest_offset if strategy == "earliest" else latest_offset(offsets, self._isolation)
        if self._subscriptions.complete_reset(tp, offset, generation):
            log.debug(
                "consumer_position_reset topic=%s partition=%d strategy=%s offset=%d",
                tp.topic,
                tp.partition,
                strategy,
                offset,
            )

    def _on_out_of_range(self, tp: TopicPartition, error: OffsetOutOfRange) -> bool:
        """Reset (True) or hand the error to the application (False: the worker parks)."""
        state = self._subscriptions.state(tp)
        position = state.position if state.position is not None else -1
        log_end_offset = error.details.get("log_end_offset")
        if state.last_leader_epoch is not None and isinstance(log_end_offset, int) and log_end_offset < position:
            return self._on_truncation(
                tp, position, Truncation(log_end_offset, f"the leader's log ends at {log_end_offset}")
            )
        strategy = self._subscriptions.auto_offset_reset
        if strategy == "none":
            self._fail(
                OffsetOutOfRangeError(
                    f"{tp.topic}-{tp.partition}: offset {position} is out of range "
                    f"[{error.details.get('log_start_offset')}, {log_end_offset}]",
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=position,
                    log_start_offset=error.details.get("log_start_offset"),
                    log_end_offset=log_end_offset,
                )
            )
            return False
        log.warning(
            "consumer_offset_out_of_range topic=%s partition=%d offset=%d reset=%s",
            tp.topic,
            tp.partition,
            position,
            strategy,
        )
        self._subscriptions.request_reset(tp, strategy)
        self._drop_fetched(tp)
        return True

    def _on_truncation(self, tp: TopicPartition, position: int, truncation: Truncation) -> bool:
        """Reset (True) or hand ``LogTruncationError`` to the application (False); never read on silently."""
        strategy = self._subscriptions.auto_offset_reset
        log.warning(
            "consumer_log_truncated topic=%s partition=%d position=%d divergent_offset=%s reason=%s reset=%s",
            tp.topic,
            tp.partition,
            position,
            truncation.divergent_offset,
            truncation.reason,
            strategy,
        )
        if strategy == "none":
            self._fail(LogTruncationError(tp, position, truncation.divergent_offset, truncation.reason))
            return False
        self._subscriptions.request_reset(tp, strategy)
        self._drop_fetched(tp)
        return True

    async def _validate(self, tp: TopicPartition, leader_url: str, generation: int) -> None:
        """After a leader change: is the log we consumed still the new leader's log?"""
        state = self._subscriptions.state(tp)
        position, last_epoch = state.position, state.last_leader_epoch
        assert position is not None and last_epoch is not None
        offsets = await self._client.list_offsets(tp)
        epoch_at_last_consumed = None
        if offsets.earliest_offset <= position - 1 < offsets.latest_offset:
            read = await self._client.fetch(leader_url, tp, position - 1, 1, 0)
            if read.data:
                epoch_at_last_consumed = read_header(read.data, 0).partition_leader_epoch
        if state.generation != generation:
            return
        truncation = check_position(position, last_epoch, offsets.log_end_offset, epoch_at_last_consumed)
        if truncation is not None:
            if not self._on_truncation(tp, position, truncation):
                raise _Parked
            return
        self._subscriptions.validated(tp)
        log.debug(
            "consumer_position_validated topic=%s partition=%d position=%d leader_epoch=%s",
            tp.topic,
            tp.partition,
            position,
            last_epoch,
        )

    def _drop_fetched(self, tp: TopicPartition) -> None:
        self._next_fetch_offset.pop(tp, None)
        for completed in [c for c in self._ready if c.tp == tp]:
            self._release(completed)

    # ------------------------------------------------------------------ application side

    def _fail(self, error: Exception) -> None:
        self._errors.append(error)
        self._data_ready.set()

    def raise_error(self) -> None:
        if self._errors:
            raise self._errors.pop(0)

    def _release(self, completed: CompletedFetch) -> None:
        self._ready.remove(completed)
        self._queued[completed.tp] -= 1
        self.buffered_bytes -= completed.size_bytes
        self._room_freed.set()

    def drain(
        self, max_records: int, only: set[TopicPartition] | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord]]:
        """Hand out up to ``max_records`` queued records, advancing positions; oldest answers first."""
        taken: dict[TopicPartition, list[ConsumerRecord]] = {}
        count = 0
        for completed in list(self._ready):
            if count >= max_records:
                break
            tp = completed.tp
            if only is not None and tp not in only:
                continue
            if (
                not self._subscriptions.is_assigned(tp)
                or completed.generation != self._subscriptions.state(tp).generation
            ):
                self._release(completed)
                continue
            count += self._take(completed, max_records - count, taken)
        return taken

    def _take(self, completed: CompletedFetch, budget: int, taken: dict[TopicPartition, list[ConsumerRecord]]) -> int:
        tp = completed.tp
        state = self._subscriptions.state(tp)
        assert state.position is not None
        result = completed.take(state.position, budget, state.last_leader_epoch)
        if result.records:
            self._subscriptions.advance(tp, result.consumed_to, result.leader_epoch)
            taken.setdefault(tp, []).extend(result.records)
        if result.divergent_offset is not None:
            reason = f"a batch at offset {result.divergent_offset} has an older leader epoch than records before it"
            if self._on_truncation(tp, state.position, Truncation(result.divergent_offset, reason)):
                self.restart(tp)
            else:
                self._stop_worker(tp)
                self._parked.add(tp)
        elif result.exhausted:
            self._subscriptions.skip_to(tp, result.next_offset)
            self._release(completed)
        return len(result.records)

    async def wait_for_data(self, timeout_s: float) -> None:
        self._data_ready.clear()
        if self._ready or self._errors:
            return
        await wait_event(self._data_ready, timeout_s)
