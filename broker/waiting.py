"""Waiting with a timeout without ever losing a cancellation.

Python 3.11's ``asyncio.wait_for`` returns the inner result when the inner awaitable
has finished by the time the waiting task is cancelled: the cancellation is
swallowed (fixed in 3.12, cpython gh-86296). A loop that waits on an event through
``wait_for`` then runs on after ``task.cancel()``, and whoever awaits the cancelled
task hangs for ever: a controller term whose broker set changed at the moment its
broker closed did exactly that, one test teardown in six. ``asyncio.timeout`` awaits
in the task itself and has no such window, so the project waits with it or with
``wait_event``; ruff bans ``asyncio.wait_for`` (TID251).

``RetryDeadline`` paces a retry loop that ends at a deadline: growing back-offs, the
last one cut to what remains, so the final attempt comes at the deadline itself rather
than giving up early or sleeping past it.
"""

from __future__ import annotations

import asyncio
import contextlib

from broker.backoff import Backoff


async def wait_event(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Wait until ``event`` is set, for at most ``timeout_s`` (None: no limit); True if it was set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(None if timeout_s is None else max(timeout_s, 0)):
            await event.wait()
    return event.is_set()


class RetryDeadline:
    """The pauses between attempts until ``within_s`` from now (the event loop's time)."""

    def __init__(self, within_s: float, initial_s: float, maximum_s: float) -> None:
        self._deadline = asyncio.get_running_loop().time() + within_s
        self._backoff = Backoff(initial_s, maximum_s)

    async def pause(self) -> bool:
        """Wait before the next attempt and answer True; False at once when the deadline has passed."""
        remaining = self._deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(self._backoff.next_delay(), remaining))
        return True
