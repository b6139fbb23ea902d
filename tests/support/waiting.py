"""The one way a test waits: on a condition, never on the clock.

``wait_until`` polls a blocking condition, ``wait_until_async`` an awaitable one
inside an event loop (the in-process tiers), on the same terms.

A test that sleeps guesses how long the broker needs and is either slow or flaky; a
test that waits on a condition takes as long as the broker takes. The deadline only
bounds a hang, so it is generous: when it passes, the failure names what was awaited
and the last answer seen, so a timeout explains itself.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.02
TRANSIENT_ERRORS = (urllib.error.URLError, ConnectionError, TimeoutError, OSError, KeyError)
"""What a condition may raise while a broker starts, stops or moves leadership: asked again."""


def wait_until(
    condition: Callable[[], T | None],
    what: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = POLL_INTERVAL_S,
) -> T:
    """Call ``condition`` until it returns something truthy and return that.

    A transient error (``TRANSIENT_ERRORS``) counts as "not yet". After ``timeout_s``
    the ``AssertionError`` names ``what`` and the last answer or error.
    """
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        try:
            last = condition()
        except TRANSIENT_ERRORS as error:
            last = error
        if last and not isinstance(last, BaseException):
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.1f} s waiting for {what}; last seen: {last!r}")
        time.sleep(interval_s)


async def wait_until_async(
    condition: Callable[[], Awaitable[T | None]],
    what: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = 0.005,
) -> T:
    """``wait_until`` for a condition that is awaited: the event loop keeps running between tries."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        last = await condition()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.1f} s waiting for {what}; last seen: {last!r}")
        await asyncio.sleep(interval_s)
