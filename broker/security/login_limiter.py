"""Slows password guessing: a source that failed to log in too often in the last minute must wait.

Each source (a client address) keeps the times of its recent failed logins in a sliding
window of ``WINDOW_MS``. With ``max_failures_per_minute`` failures inside the window the
source is blocked until the oldest of them leaves it; a failure counts for exactly
``WINDOW_MS`` after it happened. ``now_ms`` must come from a monotonic clock.

A successful login does not clear the failures: otherwise an attacker who knows one good
password (their own) could interleave it with guesses at another user's and never be slowed.

Memory is bounded: a source keeps at most ``max_failures_per_minute`` timestamps (older ones
cannot decide a block), and at most ``max_sources`` sources are tracked; beyond that the
source that failed least recently is forgotten, as it is the one closest to being free anyway.
"""

from __future__ import annotations

from collections import OrderedDict, deque

WINDOW_MS = 60_000


class LoginLimiter:
    __slots__ = ("_failures", "_max_failures", "_max_sources")

    def __init__(self, max_failures_per_minute: int, max_sources: int = 10_000) -> None:
        if max_failures_per_minute < 1 or max_sources < 1:
            raise ValueError("a login limiter allows at least one failure and tracks at least one source")
        self._max_failures = max_failures_per_minute
        self._max_sources = max_sources
        self._failures: OrderedDict[str, deque[int]] = OrderedDict()

    def blocked(self, source: str, now_ms: int) -> int:
        """Milliseconds until ``source`` may try to log in again; 0 when it may now."""
        failures = self._failures.get(source)
        if failures is None:
            return 0
        while failures and failures[0] <= now_ms - WINDOW_MS:
            failures.popleft()
        if not failures:
            del self._failures[source]
            return 0
        if len(failures) < self._max_failures:
            return 0
        return failures[0] + WINDOW_MS - now_ms

    def record_failure(self, source: str, now_ms: int) -> None:
        """Counts a failed login from ``source`` at ``now_ms``."""
        failures = self._failures.get(source)
        if failures is None:
            failures = self._failures[source] = deque(maxlen=self._max_failures)
        else:
            self._failures.move_to_end(source)
        failures.append(now_ms)
        while len(self._failures) > self._max_sources:
            self._failures.popitem(last=False)

    def __len__(self) -> int:
        """The number of sources whose failures are tracked."""
        return len(self._failures)
