"""The cyclic garbage collector paused while a poll makes its record views.

Why: a poll makes up to ``max_poll_records`` record views (``consumer.records``) at
once, and all of them stay alive until the application has read them. Made with the
collector running, every 700 new objects start a young collection, which finds the
views alive and moves them to an older generation; within a poll of thousands they
reach the oldest one, and its collections walk every object of the process (tens to
hundreds of thousands once aiohttp and pydantic are loaded). Measured with 20 000
records per poll, those collections took a third of the consumer's time. The views
hold no reference cycles (a view refers to its batch, a batch to bytes and to lists of
bytes and ints), so a collection can never free one: reference counting frees them
when the application drops them. Made with the collector paused, they are usually
gone before any collection looks at them.

Invariant: when the last of overlapping pauses (from several threads or nested) ends,
the collector is on if and only if it was on when the first began. A thread that
switches the collector on or off while a pause is running in another thread has its
switch undone when the pause ends; nothing in this library does that.

Pure apart from the interpreter's collector switch: no I/O, no asyncio. The ``gc``
functions are imported by name: ``tests/unit/clients/test_library_logging.py`` refuses
any ``.disable()`` call in a client module, to catch ``logging.disable``.
"""

from __future__ import annotations

import threading
from gc import disable as disable_collector
from gc import enable as enable_collector
from gc import isenabled as collector_enabled
from types import TracebackType


class CollectorPause:
    """A context manager: the collector is off inside; overlapping uses nest."""

    __slots__ = ("_depth", "_lock", "_was_enabled")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    def __enter__(self) -> None:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = collector_enabled()
                disable_collector()
            self._depth += 1

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0 and self._was_enabled:
                enable_collector()


COLLECTOR_PAUSED = CollectorPause()
"""The one pause every record-making path shares, so that overlapping polls nest."""
