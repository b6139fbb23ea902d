"""An asyncio loop on simulated time, for running the broker's own drivers deterministically.

``VirtualTimeLoop.time()`` is a number the loop advances itself: whenever nothing is
ready to run and the loop would block until its next timer, it jumps straight to that
timer instead of waiting. Timeouts, long polls, back-offs and the replicas' ISR-lag
timers all read ``loop.time()`` (or a ``clock_ms`` built on it), so a minute of
broker time passes in milliseconds, and the same inputs run the same way every time.

``InlineExecutor`` runs ``run_in_executor`` work at once on the loop's thread, so disk
work takes no simulated time and no thread interleaves with the loop.

``run_until`` runs a loop in steps, as the seeded simulation does with one loop per
simulated broker: everything due up to a given instant runs, and the loop returns idle
with its clock at that instant.

Invariant: the loop never waits on real time; it still polls its real file descriptors
(the self-pipe that ``call_soon_threadsafe`` and completed executor futures write to),
so an in-process transport and the inline executor work unchanged. A loop with nothing
scheduled and nothing ready would wait for ever: outside ``run_until`` it raises instead.
"""

from __future__ import annotations

import asyncio
import collections
import math
import selectors
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class InlineExecutor(ThreadPoolExecutor):
    """A default executor (asyncio takes only thread pools) that runs each call at once and starts no thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 - the caller awaits the future and sees it
            future.set_exception(error)
        return future


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualTimeLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if ready or timeout == 0:
            return ready
        assert self.loop is not None
        self.loop.would_wait(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector loop whose clock starts at ``start`` and moves only when the loop would otherwise wait.

    The clock counts whole microseconds, and a wait moves it by at least one, rounded
    up: a timer fires at its instant or up to a microsecond after, never before, so a
    driver that waits for "what remains until a deadline" always finds the deadline
    passed when it wakes. (On a float clock a deadline could stay a rounding error
    ahead and be waited for again and again at the same instant.)
    """

    _ready: collections.deque[asyncio.Handle]
    _scheduled: list[asyncio.TimerHandle]
    """The base loop's ready queue and timer heap, read by ``_due`` (asyncio has no public view of them)."""

    def __init__(self, start: float = 0.0) -> None:
        selector = _JumpingSelector()
        super().__init__(selector)
        selector.loop = self
        self._now_us = round(start * 1_000_000)
        self._until_us: int | None = None
        self.set_default_executor(InlineExecutor())

    def time(self) -> float:
        return self._now_us / 1_000_000

    def advance(self, seconds: float) -> None:
        self._now_us += round(seconds * 1_000_000)

    def _step_us(self, timeout: float) -> int:
        """How far a wait of ``timeout`` seconds moves the clock: at least a microsecond, rounded up."""
        return max(1, math.ceil(timeout * 1_000_000))

    def _reachable(self, timeout: float) -> bool:
        """Whether a wait of ``timeout`` ends within the ``run_until`` instant (or a microsecond past it)."""
        return self._until_us is None or self._now_us + self._step_us(timeout) <= self._until_us + 1

    def would_wait(self, timeout: float | None) -> None:
        """Nothing is ready: jump to the next timer, or stop at the ``run_until`` instant if it comes first."""
        if timeout is not None and self._reachable(timeout):
            self._now_us += self._step_us(timeout)
        elif self._until_us is None:
            raise RuntimeError("the virtual-time loop has nothing scheduled and nothing ready: it would wait for ever")
        else:
            self._now_us = max(self._now_us, self._until_us)
            self.stop()

    def run_until(self, instant: float) -> None:
        """Run every callback and timer due up to ``instant`` (loop time, seconds); return idle, the clock there.

        A loop whose clock is already past ``instant`` runs only what is ready now.
        """
        self._until_us = round(instant * 1_000_000)
        try:
            while True:
                self.run_forever()
                if not self._due():
                    return
        finally:
            self._until_us = None

    def _due(self) -> bool:
        """Whether a callback is ready or a live timer is due by the ``run_until`` instant (stopping leaves them)."""
        now = self.time()
        return bool(self._ready) or any(
            not timer.cancelled() and (timer.when() <= now or self._reachable(timer.when() - now))
            for timer in self._scheduled
        )

    def clock_ms(self) -> int:
        """The loop's time in milliseconds: the ``clock_ms`` a driver on this loop is given."""
        return self._now_us // 1_000


def run_on_virtual_time(main: Callable[[VirtualTimeLoop], Any]) -> Any:
    """Run the coroutine ``main(loop)`` to completion on a fresh ``VirtualTimeLoop``."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main(loop))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
