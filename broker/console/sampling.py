"""The driver around the console's pure rings: two timers and the metadata hook.

``ConsoleData`` is ``node.console`` of every broker. Its timers sample on their own
schedule, so every viewer reads the same last sample and a request never triggers
sampling work:

* every ``activity_sample_interval_ms`` the traffic counters become rates
  (``broker.console.activity``);
* every ``lag_sample_interval_ms`` each group this broker coordinates gets a lag
  sample (``broker.console.lag_history``), computed by ``broker.groups.lag`` as the
  ``…/lags`` route computes it. A group whose coordinator moves starts a new history on
  its new coordinator; the old one forgets it at its next sample.

The metadata view calls ``on_partition_record`` and ``on_partition_deleted`` for every
partition record it applies, in store order, on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import structlog

from broker.clock import wall_clock_ms
from broker.console.activity import ActivitySampler, TrafficCounters
from broker.console.isr_events import IsrEventLog
from broker.console.lag_history import LagHistory, LagSample, PartitionLag
from broker.groups.lag import LagRow, group_lag_rows
from config.console import ConsoleSettings

if TYPE_CHECKING:
    from broker.cluster.records import PartitionRecord
    from broker.groups.coordinator import GroupCoordinator

log = structlog.get_logger(__name__)


def lag_sample(time_ms: int, rows: list[LagRow]) -> LagSample:
    """The partitions with a commit and a known high watermark, as ``LagSample`` keeps them."""
    return LagSample(
        time_ms,
        tuple(
            PartitionLag(row.topic_name, row.partition_id, row.current_offset, row.log_end_offset, row.lag, row.lag_ms)
            for row in sorted(rows, key=lambda row: (row.topic_name, row.partition_id))
            if row.current_offset is not None and row.log_end_offset is not None and row.lag is not None
        ),
    )


class ConsoleData:
    """See the module docstring."""

    def __init__(self, settings: ConsoleSettings, groups: GroupCoordinator) -> None:
        self.settings = settings
        self.groups = groups
        self.isr_events = IsrEventLog(settings.isr_events_per_topic)
        self.traffic = TrafficCounters()
        self.activity = ActivitySampler(settings.activity_history_samples)
        self.lag_history = LagHistory(settings.lag_history_samples)
        self._tasks: list[asyncio.Task] = []

    def start(self) -> None:
        self._every(self.settings.activity_sample_interval_ms, self._sample_activity, "console-activity")
        self._every(self.settings.lag_sample_interval_ms, self.sample_lag, "console-lag")

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    def on_partition_record(self, record: PartitionRecord) -> None:
        self.isr_events.observe(record, wall_clock_ms())

    def on_partition_deleted(self, topic: str, partition: int) -> None:
        self.isr_events.forget(topic, partition)
        self.traffic.forget(topic)

    def _every(self, interval_ms: int, sample: Callable[[], Awaitable[None]], name: str) -> None:
        self._tasks.append(asyncio.create_task(self._loop(interval_ms / 1000, sample), name=name))

    @staticmethod
    async def _loop(interval_s: float, sample: Callable[[], Awaitable[None]]) -> None:
        """Sleep, sample, repeat; one failed sample is logged and the next one tried."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await sample()
            except Exception as error:  # noqa: BLE001 - a failed sample must not end the sampling
                log.warning("console.sample_failed", error=str(error))

    async def _sample_activity(self) -> None:
        self.activity.sample(self.traffic, wall_clock_ms())

    async def sample_lag(self) -> None:
        """One sample of every group coordinated here; a group whose lag cannot be read is skipped."""
        coordinated = self.groups.local_groups()
        for _, state in coordinated:
            group_id = state.membership.group_id
            time_ms = wall_clock_ms()
            try:
                rows = await group_lag_rows(self.groups.host, state, time_ms)
            except Exception as error:  # noqa: BLE001 - one group's failure must not stop the others' samples
                log.info("console.lag_sample_failed", group_id=group_id, error=str(error))
                continue
            self.lag_history.record(group_id, lag_sample(time_ms, rows))
        self.lag_history.retain(state.membership.group_id for _, state in coordinated)
