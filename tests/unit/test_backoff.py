"""``Backoff``: the delays the store retry loops wait between attempts."""

from __future__ import annotations

import pytest

from broker.backoff import Backoff


def test_delays_double_from_initial_and_stay_at_the_maximum() -> None:
    backoff = Backoff(50, 2000)
    assert [backoff.next_delay() for _ in range(8)] == [50, 100, 200, 400, 800, 1600, 2000, 2000]


def test_a_fractional_unit_reaches_the_maximum_exactly() -> None:
    backoff = Backoff(0.1, 2.0)
    assert [backoff.next_delay() for _ in range(7)] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0])


def test_reset_starts_again_from_initial() -> None:
    backoff = Backoff(50, 2000)
    for _ in range(4):
        backoff.next_delay()
    backoff.reset()
    assert [backoff.next_delay(), backoff.next_delay()] == [50, 100]


def test_multiplier_sets_the_growth() -> None:
    backoff = Backoff(10, 100, multiplier=3)
    assert [backoff.next_delay() for _ in range(4)] == [10, 30, 90, 100]


def test_a_multiplier_of_one_is_a_constant_wait() -> None:
    backoff = Backoff(500, 500, multiplier=1)
    assert [backoff.next_delay() for _ in range(3)] == [500, 500, 500]


@pytest.mark.parametrize(
    ("initial", "maximum", "multiplier", "reason"),
    [(0, 100, 2, "0 < initial <= maximum"), (200, 100, 2, "0 < initial <= maximum"), (10, 100, 0.5, "at least 1")],
)
def test_settings_that_would_not_back_off_are_refused(
    initial: float, maximum: float, multiplier: float, reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        Backoff(initial, maximum, multiplier)
