"""A private event loop on a background thread, behind the synchronous client facades.

Scripts and Spark executors are not asyncio programs; ``SyncProducer`` and
``SyncConsumer`` run the async clients on a loop owned by one daemon thread and block
on ``run_coroutine_threadsafe`` futures. Everything the async client touches stays on
that one thread, so the async code needs no locks.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

Result = TypeVar("Result")


class LoopThread:
    """Start with ``LoopThread(name)``; ``run`` a coroutine to completion; ``stop`` once."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    def submit(self, coroutine: Coroutine[Any, Any, Result]) -> Future[Result]:
        """Schedule ``coroutine`` on the loop; a thread-safe future of its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, Result], timeout_s: float | None = None) -> Result:
        return self.submit(coroutine).result(timeout_s)

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
