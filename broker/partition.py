"""One partition replica on this broker: its log, its role, and the high watermark.

The ``Partition`` is the async shell around the synchronous ``PartitionLog``: disk
work runs in the default executor so the event loop never blocks on a write or an
fsync, and an ``asyncio.Lock`` serialises appends so offsets are assigned in the
order requests were admitted (one appender at a time per partition; reads run
concurrently).

Visibility rule (the reason the project exists): readers get only records below the
high watermark. Invariant: ``log_start_offset <= high_watermark <= log_end_offset``;
on a leader the high watermark never moves back.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import structlog

from broker.errors import (
    OUTCOME_UNKNOWN,
    NotLeaderOrFollower,
    RequestTimedOut,
)
from broker.storage import GroupCommitFlusher, PartitionLog, ReadResult

log = structlog.get_logger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    base_offset: int
    last_offset: int
    log_append_time_ms: int


class HighWatermarkWaiters:
    """Wakes every coroutine waiting for the high watermark to move.

    ``notify`` sets the current event and replaces it, so each waiter sees every
    change after it started waiting; waiters re-check their own condition. Used by
    long-poll reads and acks=all.
    """

    def __init__(self) -> None:
        self._changed = asyncio.Event()

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait(self, timeout_s: float) -> None:
        event = self._changed
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass


class Partition:
    """A local replica of ``topic-partition``: the leader's append/read paths and its HW."""

    def __init__(
        self,
        topic: str,
        partition: int,
        log_: PartitionLog,
        flusher: GroupCommitFlusher,
        *,
        local_broker_id: int,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.log = log_
        self._flusher = flusher
        self.local_broker_id = local_broker_id
        self.leader_id = -1
        self.leader_epoch = -1
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self._high_watermark = log_.log_start_offset
        self._append_lock = asyncio.Lock()
        self._waiters = HighWatermarkWaiters()

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_broker_id

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    def become_leader(self, leader_epoch: int, replicas: list[int], isr: list[int], checkpointed_hw: int) -> None:
        """Take leadership in ``leader_epoch``: record the epoch start, then recompute the HW.

        The epoch is recorded at the current LEO before any append in it (KIP-101).
        With the ISR being only this broker the HW is the LEO at once, as Kafka's
        ``maybeIncrementLeaderHW`` would compute; a checkpointed HW is a floor.
        """
        self.leader_id = self.local_broker_id
        self.leader_epoch = leader_epoch
        self.replicas = list(replicas)
        self.isr = list(isr)
        self.log.assign_epoch(leader_epoch, self.log.log_end_offset)
        floor = max(self.log.log_start_offset, min(checkpointed_hw, self.log.log_end_offset))
        self._high_watermark = max(self._high_watermark, floor)
        self._maybe_increment_high_watermark()
        log.info(
            "partition.became_leader",
            topic=self.topic,
            partition=self.partition,
            leader_epoch=leader_epoch,
            log_end_offset=self.log_end_offset,
            high_watermark=self._high_watermark,
        )

    def _maybe_increment_high_watermark(self) -> None:
        if self.isr == [self.local_broker_id]:
            new_hw = self.log.log_end_offset
            if new_hw > self._high_watermark:
                self._high_watermark = new_hw
                self._waiters.notify()

    def _require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollower(
                f"broker {self.local_broker_id} is not the leader of {self.topic}-{self.partition}",
                leader_id=self.leader_id,
            )

    async def append(self, batch: bytes, acks: str, timeout_ms: int) -> AppendOutcome:
        """Append as leader; return once the batch meets ``acks``.

        acks=1: once the bytes are in the OS (never in a Python buffer). acks=all: also
        fsynced when the flush policy says so (group commit) and below the HW.
        """
        self._require_leader()
        loop = asyncio.get_running_loop()
        async with self._append_lock:
            self._require_leader()
            info = await loop.run_in_executor(None, self.log.append_as_leader, batch, self.leader_epoch, now_ms())
            self._maybe_increment_high_watermark()
        if acks == "all":
            await self._flusher.flush_for_ack(self.log)
            await self._wait_for_high_watermark(info.last_offset + 1, timeout_ms)
        return AppendOutcome(info.base_offset, info.last_offset, info.log_append_time_ms)

    async def _wait_for_high_watermark(self, offset: int, timeout_ms: int) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        while self._high_watermark < offset:
            self._require_leader()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestTimedOut(
                    f"timed out after {timeout_ms} ms waiting for the in-sync replicas of "
                    f"{self.topic}-{self.partition} to reach offset {offset}. {OUTCOME_UNKNOWN}"
                )
            await self._waiters.wait(remaining)

    async def read(self, offset: int, max_bytes: int, timeout_ms: int) -> ReadResult:
        """Whole batches from ``offset`` below the HW; long-poll up to ``timeout_ms`` for some."""
        self._require_leader()
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            result = await loop.run_in_executor(None, self.log.read, offset, max_bytes, self._high_watermark)
            remaining = deadline - time.monotonic()
            if result.data or remaining <= 0:
                return result
            await self._waiters.wait(remaining)
            self._require_leader()
