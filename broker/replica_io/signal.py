"""Wake-ups for coroutines waiting on a partition: "the HW moved", "records were appended".

A waiter registers an ``asyncio.Event`` *before* it checks its condition, then waits;
``notify`` sets every registered event and forgets them. Registering first means a
change between the check and the wait is never missed. One event may be registered
on several signals, so a replica fetch covering many partitions waits on all at once.

``end`` says no change will be worth waiting for any more (the broker is stopping): it
wakes every waiter, and a loop that sees ``ended`` answers with what it has instead of
waiting again, so a stopping broker is never held up by a long poll's full wait.
"""

from __future__ import annotations

import asyncio


class Signal:
    def __init__(self) -> None:
        self._listeners: set[asyncio.Event] = set()
        self.ended = False

    def register(self, event: asyncio.Event) -> None:
        self._listeners.add(event)

    def unregister(self, event: asyncio.Event) -> None:
        self._listeners.discard(event)

    def waiter(self) -> asyncio.Event:
        event = asyncio.Event()
        self.register(event)
        return event

    def notify(self) -> None:
        listeners, self._listeners = self._listeners, set()
        for event in listeners:
            event.set()

    @property
    def waiting(self) -> int:
        """How many waiters are registered now: a parked long poll is one."""
        return len(self._listeners)

    def end(self) -> None:
        """Wake every waiter for good: from now on ``ended`` is true."""
        self.ended = True
        self.notify()
