"""Wake-ups for coroutines waiting on a partition: "the HW moved", "records were appended".

A waiter registers an ``asyncio.Event`` *before* it checks its condition, then waits;
``notify`` sets every registered event and forgets them. Registering first means a
change between the check and the wait is never missed. One event may be registered
on several signals, so a replica fetch covering many partitions waits on all at once.
"""

from __future__ import annotations

import asyncio


class Signal:
    def __init__(self) -> None:
        self._listeners: set[asyncio.Event] = set()

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
