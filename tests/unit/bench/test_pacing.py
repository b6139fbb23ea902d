"""A paced load task sleeps only when at least 2 ms ahead of its rate, as Kafka's perf tool does."""

from __future__ import annotations

import time

from broker.bench.workloads import MIN_PACE_SLEEP_NS, _paced

INTERVAL_NS = 100_000.0
"""10 000 records/s: 20 records are 2 ms."""


async def test_a_task_less_than_the_minimum_ahead_sends_on_without_sleeping() -> None:
    started_ns = time.monotonic_ns()
    assert not await _paced(started_ns, 10, INTERVAL_NS)


async def test_a_task_behind_its_rate_sends_on() -> None:
    assert not await _paced(time.monotonic_ns() - 10 * MIN_PACE_SLEEP_NS, 5, INTERVAL_NS)


async def test_a_task_the_minimum_ahead_sleeps_until_its_rate_catches_up() -> None:
    started_ns = time.monotonic_ns()
    assert await _paced(started_ns, 40, INTERVAL_NS)
    assert time.monotonic_ns() - started_ns >= 3 * MIN_PACE_SLEEP_NS / 2
