"""``retrying``: a client call repeated while its error says to retry, until a time bound.

The clients' coordinator calls (a group's commits, a transaction's calls, a Spark
driver ending its tasks' transactions) all retry the same way: an error marked
retriable (no coordinator yet, one moving or loading, a previous transaction still
completing), or one the caller names, is retried after ``backoff_ms`` as long as the
next attempt still starts within ``within_ms`` of the first; any other error, or the
last one at the bound, is raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from broker.clock import monotonic_ms
from broker.errors import HighwaterError

Result = TypeVar("Result")


async def retrying(
    attempt: Callable[[], Awaitable[Result]],
    within_ms: int,
    backoff_ms: int,
    *,
    also_retry: tuple[type[HighwaterError], ...] = (),
    on_retry: Callable[[HighwaterError], None] | None = None,
) -> Result:
    """``attempt()``'s result; ``on_retry`` hears each error that is retried."""
    deadline_ms = monotonic_ms() + within_ms
    while True:
        try:
            return await attempt()
        except HighwaterError as error:
            retry = error.retriable or isinstance(error, also_retry)
            if not retry or monotonic_ms() + backoff_ms > deadline_ms:
                raise
            if on_retry is not None:
                on_retry(error)
            await asyncio.sleep(backoff_ms / 1000)
