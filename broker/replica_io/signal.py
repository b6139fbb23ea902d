"""Wake-ups for coroutines waiting on a partition: "the HW moved", "records were appended".

A waiter registers an ``asyncio.Event`` *before* it checks its condition, then waits;
``notify`` sets every registered event and forgets them. Registering first means a
change between the check and the wait is never missed. One event may be registered
on several signals, so a replica fetch covering many partitions waits on all at once.

``end`` says no change will be worth waiting for any more (the broker is stopping): it
wakes every waiter, and a loop that sees ``ended`` answers with what it has instead of
waiting again, so a stopping broker is never held up by a long poll's full wait.

Waiters are woken in the order they registered (an insertion-ordered dict, not a set
ordered by object addresses), so the same events wake the same tasks in the same order
on every run: the seeded simulation replays a seed exactly.
"""

from __future__ import annotations

import asyncio


class Signal:
    def __init__(self) -> None:
        self._listeners: dict[asyncio.Event, None] = {}
        self.ended = False

    def register(self, event: asyncio.Event) -> None:
        self._listeners[event] = None

    def unregister(self, event: asyncio.Event) -> None:
        self._listeners.pop(event, None)

    def waiter(self) -> asyncio.Event:
        event = asyncio.Event()
        self.register(event)
        return event

    def notify(self) -> None:
        listeners, self._listeners = self._listeners, {}
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
