"""An asyncio loop on simulated time, for running the broker's own drivers deterministically.

``VirtualTimeLoop.time()`` is a number the loop advances itself: whenever nothing is
ready to run and the loop would block until its next timer, it jumps straight to that
timer instead of waiting. Timeouts, long polls, back-offs and the replicas' ISR-lag
timers all read ``loop.time()`` (or a ``clock_ms`` built on it), so a minute of
broker time passes in milliseconds, and the same inputs run the same way every time.

``InlineExecutor`` runs ``run_in_executor`` work at once on the loop's thread, so disk
work takes no simulated time and no thread interleaves with the loop.

Invariant: the loop never waits on real time; it still polls its real file descriptors
(the self-pipe that ``call_soon_threadsafe`` and completed executor futures write to),
so an in-process transport and the inline executor work unchanged. A loop with nothing
scheduled and nothing ready would wait for ever: it raises instead.
"""

from __future__ import annotations

import asyncio
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
        if timeout is None:
            raise RuntimeError("the virtual-time loop has nothing scheduled and nothing ready: it would wait for ever")
        assert self.loop is not None
        self.loop.advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector loop whose clock starts at 0 and moves only when the loop would otherwise wait."""

    def __init__(self) -> None:
        selector = _JumpingSelector()
        super().__init__(selector)
        selector.loop = self
        self._now = 0.0
        self.set_default_executor(InlineExecutor())

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    def clock_ms(self) -> int:
        """The loop's time in milliseconds: the ``clock_ms`` a driver on this loop is given."""
        return int(self._now * 1000)


def run_on_virtual_time(main: Callable[[VirtualTimeLoop], Any]) -> Any:
    """Run the coroutine ``main(loop)`` to completion on a fresh ``VirtualTimeLoop``."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main(loop))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
