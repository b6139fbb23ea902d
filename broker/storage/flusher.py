"""When partition logs are fsynced: group commit for acks, or a background interval.

``GroupCommitFlusher`` (flush policy ``fsync``): an acks=all producer waits for an
fsync that *started after its append*, so its bytes are on disk. While one fsync runs,
every caller that arrives meanwhile waits for the next one, and that single next
fsync covers all their appends: N concurrent producers cost about two fsyncs, not N.
One driver task per log runs the fsyncs one after another in a worker thread, never
on the event loop.

``IntervalFlusher`` (policy ``interval``): fsyncs each such log with unflushed data
every ``flush_interval_ms``. Policy ``os`` is left to the page cache; its logs are
fsynced only by ``PartitionLog.close``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import structlog

from broker.clock import monotonic_ms
from broker.storage.log import PartitionLog
from broker.storage.log_config import FLUSH_INTERVAL

logger = structlog.get_logger(__name__)


@dataclass(slots=True)
class _GroupCommitState:
    next_fsync: asyncio.Future[None] | None = None
    """Resolved by the next fsync to *start*; callers arriving while one runs join it."""
    driver: asyncio.Task[None] | None = None


class GroupCommitFlusher:
    """Coalesces concurrent ``flush`` calls on a log into as few fsyncs as possible.

    A call on an idle log submits its fsync to the executor at once, in the call: a
    lone acks=all producer's fsync then runs beside whatever the loop does next (the
    follower fetch its append woke), instead of one loop turn later in a new task.
    """

    def __init__(self) -> None:
        self._states: dict[PartitionLog, _GroupCommitState] = {}

    async def flush(self, log: PartitionLog) -> None:
        """Return once an fsync of ``log`` that started after this call has completed."""
        loop = asyncio.get_running_loop()
        state = self._states.setdefault(log, _GroupCommitState())
        if state.driver is None:
            waiter: asyncio.Future[None] = loop.create_future()
            fsync = loop.run_in_executor(None, log.flush)
            state.driver = asyncio.create_task(
                self._drive(log, state, fsync, waiter), name=f"group-commit-{log.topic}-{log.partition}"
            )
            state.driver.add_done_callback(partial(self._cancelled_before_it_ran, log, state, fsync, waiter))
        else:
            if state.next_fsync is None:
                state.next_fsync = loop.create_future()
            waiter = state.next_fsync
        await asyncio.shield(waiter)

    async def _drive(
        self, log: PartitionLog, state: _GroupCommitState, fsync: asyncio.Future[None], waiters: asyncio.Future[None]
    ) -> None:
        """Answer ``waiters`` with ``fsync``, then run one fsync for everyone who arrived meanwhile, until none did."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    await fsync
                except Exception as error:  # noqa: BLE001 - every failure must reach the waiting producers
                    logger.error("flush.failed", topic=log.topic, partition=log.partition, error=str(error))
                    waiters.set_exception(error)
                    waiters.add_done_callback(lambda future: future.exception())
                else:
                    waiters.set_result(None)
                if state.next_fsync is None:
                    return
                waiters, state.next_fsync = state.next_fsync, None
                fsync = loop.run_in_executor(None, log.flush)
        except asyncio.CancelledError:
            fsync.cancel()
            for pending in (waiters, state.next_fsync):
                if pending is not None and not pending.done():
                    pending.cancel()
            state.next_fsync = None
            raise
        finally:
            state.driver = None
            if state.next_fsync is None:
                self._states.pop(log, None)

    def _cancelled_before_it_ran(
        self,
        log: PartitionLog,
        state: _GroupCommitState,
        fsync: asyncio.Future[None],
        waiters: asyncio.Future[None],
        driver: asyncio.Task[None],
    ) -> None:
        """Do the cleanup of a driver cancelled before its first step, whose body (and ``finally``) never ran.

        Without it the log kept that dead driver: its first callers waited for ever on a future
        nobody would resolve, and every later caller joined them (a flush test hung one run in
        many, when the fsync finished before the driver's first step and a second driver was
        cancelled at once). A driver that ran has reset ``state.driver`` itself.
        """
        if state.driver is not driver:
            return
        fsync.cancel()
        for pending in (waiters, state.next_fsync):
            if pending is not None and not pending.done():
                pending.cancel()
        state.next_fsync = None
        state.driver = None
        self._states.pop(log, None)


@dataclass(slots=True)
class IntervalFlusher:
    """Background fsync of ``interval``-policy logs every ``flush_interval_ms``.

    Its owner names every log it opens and every log whose config changed (``watch``), so
    a tick looks only at the interval-policy logs, never at every log of the broker: a
    walk of every log each second was 9 % of an idle broker's profile with 10 000
    replicas, and under the default ``fsync`` policy it never flushes anything. A closed
    log is dropped at the next tick.
    """

    tick_ms: int = 100
    clock_ms: Callable[[], int] = field(default=monotonic_ms)
    _last_flush_ms: dict[PartitionLog, int] = field(default_factory=dict)
    _task: asyncio.Task[None] | None = None

    def watch(self, log: PartitionLog) -> None:
        """``log`` was opened or its config changed: flushed from now on exactly when its policy is ``interval``."""
        if log.config.flush_policy == FLUSH_INTERVAL:
            self._last_flush_ms.setdefault(log, self.clock_ms())
        else:
            self._last_flush_ms.pop(log, None)

    async def flush_due(self) -> int:
        """fsync every interval-policy log whose interval has passed with unflushed data; return how many."""
        now_ms = self.clock_ms()
        flushed = 0
        for log in list(self._last_flush_ms):
            if log.closed:
                del self._last_flush_ms[log]
                continue
            last_ms = self._last_flush_ms[log]
            if now_ms - last_ms < log.config.flush_interval_ms or log.recovery_point >= log.log_end_offset:
                continue
            try:
                await asyncio.to_thread(log.flush)
            except Exception as error:  # noqa: BLE001 - one failing log must not stop the others' flushes
                logger.error("flush.failed", topic=log.topic, partition=log.partition, error=str(error))
                continue
            if log in self._last_flush_ms:
                self._last_flush_ms[log] = now_ms
            flushed += 1
        return flushed

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="interval-flusher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.tick_ms / 1000)
            await self.flush_due()
