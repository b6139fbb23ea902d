"""The broker's two clocks, in milliseconds.

- ``wall_clock_ms``: the time of day, for what is stamped and shown: record and commit
  timestamps, log retention by age, lease expiry shared through the metadata store.
- ``monotonic_ms``: for durations measured inside one process: timeouts, back-offs,
  rates. A step of the system clock changes no timeout and no rate.

Everything reads time through these two (or an injected clock in their place), so a
test or a simulation knows which one it is replacing.
"""

from __future__ import annotations

import time


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000
