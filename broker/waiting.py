"""Waiting with a timeout without ever losing a cancellation.

Python 3.11's ``asyncio.wait_for`` returns the inner result when the inner awaitable
has finished by the time the waiting task is cancelled: the cancellation is
swallowed (fixed in 3.12, cpython gh-86296). A loop that waits on an event through
``wait_for`` then runs on after ``task.cancel()``, and whoever awaits the cancelled
task hangs for ever: a controller term whose broker set changed at the moment its
broker closed did exactly that, one test teardown in six. ``asyncio.timeout`` awaits
in the task itself and has no such window, so the project waits with it or with
``wait_event``; ruff bans ``asyncio.wait_for`` (TID251).
"""

from __future__ import annotations

import asyncio
import contextlib


async def wait_event(event: asyncio.Event, timeout_s: float | None) -> bool:
    """Wait until ``event`` is set, for at most ``timeout_s`` (None: no limit); True if it was set."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(None if timeout_s is None else max(timeout_s, 0)):
            await event.wait()
    return event.is_set()
