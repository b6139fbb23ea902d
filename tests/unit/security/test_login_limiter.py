"""Failed logins per source: a sliding one-minute window, a block until the oldest failure ages out, bounded memory."""

from __future__ import annotations

import pytest

from broker.security.login_limiter import WINDOW_MS, LoginLimiter

SOURCE = "10.0.0.1"
T0 = 1_000_000


def failed(limiter: LoginLimiter, *times: int, source: str = SOURCE) -> LoginLimiter:
    for now_ms in times:
        limiter.record_failure(source, now_ms)
    return limiter


def test_a_source_without_failures_may_try() -> None:
    assert LoginLimiter(3).blocked(SOURCE, T0) == 0


@pytest.mark.parametrize("failures", [1, 2])
def test_fewer_failures_than_the_limit_do_not_block(failures: int) -> None:
    limiter = failed(LoginLimiter(3), *(T0 + i for i in range(failures)))
    assert limiter.blocked(SOURCE, T0 + 10) == 0


def test_the_limit_blocks_until_the_oldest_failure_leaves_the_window() -> None:
    limiter = failed(LoginLimiter(3), T0, T0 + 1_000, T0 + 2_000)
    assert limiter.blocked(SOURCE, T0 + 2_000) == WINDOW_MS - 2_000
    assert limiter.blocked(SOURCE, T0 + 30_000) == WINDOW_MS - 30_000
    assert limiter.blocked(SOURCE, T0 + WINDOW_MS - 1) == 1
    assert limiter.blocked(SOURCE, T0 + WINDOW_MS) == 0


def test_the_window_slides_one_failure_at_a_time() -> None:
    limiter = failed(LoginLimiter(2), T0, T0 + 10_000, T0 + 20_000)
    assert limiter.blocked(SOURCE, T0 + 20_000) == 10_000 + WINDOW_MS - 20_000
    later = T0 + WINDOW_MS + 10_000
    failed(limiter, later)
    assert limiter.blocked(SOURCE, later) == T0 + 20_000 + WINDOW_MS - later


def test_failures_older_than_the_window_do_not_count() -> None:
    limiter = failed(LoginLimiter(2), T0, T0 + WINDOW_MS)
    assert limiter.blocked(SOURCE, T0 + WINDOW_MS) == 0


def test_a_source_whose_failures_all_aged_out_is_forgotten() -> None:
    limiter = failed(LoginLimiter(2), T0)
    assert len(limiter) == 1
    assert limiter.blocked(SOURCE, T0 + WINDOW_MS) == 0
    assert len(limiter) == 0


def test_sources_are_limited_independently() -> None:
    limiter = failed(LoginLimiter(1), T0)
    assert limiter.blocked(SOURCE, T0) == WINDOW_MS
    assert limiter.blocked("10.0.0.2", T0) == 0


def test_failures_while_blocked_extend_the_block() -> None:
    limiter = failed(LoginLimiter(2), T0, T0 + 1_000, T0 + 5_000)
    assert limiter.blocked(SOURCE, T0 + 5_000) == WINDOW_MS - 4_000


def test_sources_beyond_the_bound_drop_the_least_recently_failing() -> None:
    limiter = LoginLimiter(1, max_sources=3)
    for number, source in enumerate(["a", "b", "c"]):
        failed(limiter, T0 + number, source=source)
    failed(limiter, T0 + 10, source="a")
    failed(limiter, T0 + 11, source="d")
    assert len(limiter) == 3
    assert limiter.blocked("b", T0 + 12) == 0
    for kept in ("a", "c", "d"):
        assert limiter.blocked(kept, T0 + 12) > 0


def test_sources_cycling_past_the_bound_are_forgotten_before_they_return() -> None:
    limiter = LoginLimiter(2, max_sources=50)
    for number in range(2_000):
        failed(limiter, T0 + number, source=f"10.0.{number % 200}.1")
        assert len(limiter) <= 50
    assert len(limiter) == 50
    assert limiter.blocked("10.0.199.1", T0 + 2_000) == 0


def test_a_source_failing_without_pause_is_blocked_by_its_latest_failures() -> None:
    limiter = failed(LoginLimiter(5), *range(T0, T0 + 1_000))
    assert limiter.blocked(SOURCE, T0 + 1_000) == T0 + 995 + WINDOW_MS - (T0 + 1_000)


def test_asking_does_not_count_as_a_failure() -> None:
    limiter = failed(LoginLimiter(2), T0)
    for _ in range(10):
        assert limiter.blocked(SOURCE, T0 + 1) == 0


@pytest.mark.parametrize(("failures", "sources"), [(0, 10), (3, 0)])
def test_a_limiter_needs_room_for_one_failure_and_one_source(failures: int, sources: int) -> None:
    with pytest.raises(ValueError, match="at least one"):
        LoginLimiter(failures, sources)
