"""``AckRate``: an estimate of how fast the brokers acknowledge this producer's bytes.

Pure (no asyncio, no clock): time enters as ``now_ms``. The producer's back-pressure
divides its unacknowledged bytes by this rate to get the expected wait of a record
appended now (everything ahead of it must drain first), and holds ``send`` while that
exceeds ``max_queue_ms``.

Acknowledgements arrive in bursts (several pipelined requests answer together), so one
acknowledgement is no sample: bytes are summed over a window of at least ``window_ms``
of busy time, and each window's bytes/ms moves an EWMA. Only busy time counts: when the
last unacknowledged byte is acknowledged the producer calls ``idle``, and the next window
starts when the first batch acknowledged after that was created, so a pause between
bursts of sends does not read as a slow broker.
"""

from __future__ import annotations

WINDOW_MS = 20
"""Shortest span one rate sample covers: long enough to hold several acknowledgements."""
WEIGHT = 0.3
"""Weight of the newest window in the EWMA: a rate drop shows within a few windows."""


class AckRate:
    def __init__(self, *, window_ms: int = WINDOW_MS, weight: float = WEIGHT) -> None:
        self.window_ms = window_ms
        self.weight = weight
        self.bytes_per_ms: float | None = None
        """The estimate; ``None`` until one full window was seen (start-up)."""
        self._window_start_ms: int | None = None
        self._window_bytes = 0

    def acknowledged(self, size_bytes: int, now_ms: int, created_ms: int) -> bool:
        """Count ``size_bytes`` acknowledged at ``now_ms`` of a batch created at ``created_ms``;
        whether the estimate changed (a window closed)."""
        start = self._window_start_ms
        if start is None:
            start = self._window_start_ms = min(created_ms, now_ms)
        self._window_bytes += size_bytes
        elapsed = now_ms - start
        if elapsed < self.window_ms:
            return False
        sample = self._window_bytes / elapsed
        current = self.bytes_per_ms
        self.bytes_per_ms = sample if current is None else current + self.weight * (sample - current)
        self._window_start_ms = now_ms
        self._window_bytes = 0
        return True

    def idle(self) -> None:
        """Nothing is unacknowledged any more: the time until the next send is not the brokers'.

        The bytes of an unfinished window are dropped (too short a span to judge by)."""
        self._window_start_ms = None
        self._window_bytes = 0

    def limit_bytes(self, max_queue_ms: int, floor_bytes: int) -> float:
        """Unacknowledged bytes that drain in ``max_queue_ms`` at the estimated rate, at least
        ``floor_bytes``; unbounded (``inf``) while the rate is unknown."""
        if self.bytes_per_ms is None:
            return float("inf")
        return max(self.bytes_per_ms * max_queue_ms, floor_bytes)
