"""``AckRate``: the acknowledgement-rate estimate the producer's back-pressure divides by."""

from __future__ import annotations

import math

from producer.rate import AckRate


def _feed(rate: AckRate, start_ms: int, stop_ms: int, step_ms: int, size_bytes: int) -> None:
    for now in range(start_ms + step_ms, stop_ms + 1, step_ms):
        rate.acknowledged(size_bytes, now, now - step_ms)


def test_start_up_has_no_rate_and_so_no_bound() -> None:
    rate = AckRate(window_ms=20)
    assert rate.bytes_per_ms is None and rate.limit_bytes(100, 0) == math.inf
    assert not rate.acknowledged(1_000, 10, 0), "10 ms is less than a window: no sample yet"
    assert rate.limit_bytes(100, 0) == math.inf
    assert rate.acknowledged(1_000, 20, 5)
    assert rate.bytes_per_ms == 100, "2000 bytes since the first batch was created at 0"


def test_a_steady_rate_is_measured_and_bounds_bytes_by_time() -> None:
    rate = AckRate(window_ms=20)
    _feed(rate, 0, 1_000, 5, 5_000)
    assert rate.bytes_per_ms == 1_000
    assert rate.limit_bytes(50, 0) == 50_000
    assert rate.limit_bytes(50, 80_000) == 80_000, "never below the floor"


def test_a_rate_drop_shows_within_a_few_windows() -> None:
    rate = AckRate(window_ms=20, weight=0.3)
    _feed(rate, 0, 1_000, 5, 5_000)
    _feed(rate, 1_000, 1_200, 5, 500)
    assert rate.bytes_per_ms is not None and rate.bytes_per_ms < 150, "ten windows at 100 bytes/ms"


def test_an_idle_gap_is_not_read_as_a_slow_broker() -> None:
    rate = AckRate(window_ms=20)
    _feed(rate, 0, 100, 5, 5_000)
    rate.acknowledged(3_000, 103, 98)
    rate.idle()
    rate.acknowledged(5_000, 10_005, 10_000)
    _feed(rate, 10_005, 10_100, 5, 5_000)
    assert rate.bytes_per_ms == 1_000, "the 10 s pause and the cut window's bytes count for nothing"


def test_without_idle_a_pause_would_lower_the_rate() -> None:
    rate = AckRate(window_ms=20)
    _feed(rate, 0, 100, 5, 5_000)
    rate.acknowledged(5_000, 10_005, 10_000)
    assert rate.bytes_per_ms is not None and rate.bytes_per_ms < 1_000
