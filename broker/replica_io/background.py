"""A broker's periodic work on its replicas, run by ``ReplicaManager`` and by the simulation alike.

Kafka runs these as scheduled tasks: ``isr-expiration`` every ``replica.lag.time.max.ms / 2``
and the high-watermark checkpoint every ``replica.high.watermark.checkpoint.interval.ms``.
Both callers share the timing and which replicas tick; only where a checkpoint is
written differs (a file, in an executor, or the simulated disk).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable

from broker.replica_io.partition import Partition


async def every(interval_s: float, action: Callable[[], Awaitable[None] | None]) -> None:
    """Run ``action`` (awaited when it returns an awaitable) every ``interval_s``, until cancelled.

    The first run is one interval after the start, and each next one an interval after the
    last ended: a slow action delays the next rather than piling runs up."""
    while True:
        await asyncio.sleep(interval_s)
        result = action()
        if inspect.isawaitable(result):
            await result


def tick_led(partitions: Iterable[Partition]) -> None:
    """Kafka's ``isr-expiration``: tick the replicas this broker leads.

    A follower's tick asks for nothing (the core answers ``NOTHING`` without a leader
    state), and two thirds of an RF 3 broker's replicas are followers, so they are skipped.
    The iterable is copied first: a tick's proposal may change the partitions it came from."""
    for partition in list(partitions):
        if partition.is_leader:
            partition.tick()
