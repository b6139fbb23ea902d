"""Exponential backoff between the attempts of a retry loop.

``Backoff`` is pure arithmetic: it never sleeps or reads a clock, so each loop keeps
its own control flow (when to log, when a success resets the wait) and the sequence
can be tested without waiting. Delays are in whatever unit ``initial`` and
``maximum`` are given in.

Invariant: the first delay, and the first after ``reset``, is ``initial``; each next
one is the previous times ``multiplier``, capped at ``maximum``, so delays never
decrease until ``reset`` and never exceed ``maximum``.
"""

from __future__ import annotations


class Backoff:
    """The wait before each retry: ``initial``, then growing by ``multiplier`` up to ``maximum``."""

    def __init__(self, initial: float, maximum: float, multiplier: float = 2) -> None:
        if not 0 < initial <= maximum:
            raise ValueError(f"backoff needs 0 < initial <= maximum, got initial={initial}, maximum={maximum}")
        if multiplier < 1:
            raise ValueError(f"backoff multiplier must be at least 1, got {multiplier}")
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self._next = initial

    def next_delay(self) -> float:
        """The wait before the coming retry; the one after it grows."""
        delay = self._next
        self._next = min(delay * self.multiplier, self.maximum)
        return delay

    def reset(self) -> None:
        """After a success: the next failure waits ``initial`` again."""
        self._next = self.initial
