"""Step lists of ``bench scale`` are checked before anything starts; RSS growth is per unit, per step and fitted."""

from __future__ import annotations

import pytest

from broker.bench.scale_plan import parse_steps, slope, step_growth
from broker.bench.spec import SpecError


def test_steps_parse_from_comma_separated_values() -> None:
    assert parse_steps("--partitions", "1,10,100,1000,10000", 100_000) == (1, 10, 100, 1000, 10000)
    assert parse_steps("--connections", " 1, 2 ", 10) == (1, 2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1,ten", "--partitions takes comma-separated whole numbers"),
        ("", "--partitions needs at least one value"),
        (",", "--partitions needs at least one value"),
        ("0,10", "--partitions values must be at least 1"),
        ("1,200", "--partitions values must be at most 100"),
        ("10,1", "--partitions values must be distinct and ascending"),
        ("1,1", "--partitions values must be distinct and ascending"),
    ],
)
def test_bad_step_lists_are_refused_naming_the_option(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_steps("--partitions", text, 100)


def test_step_growth_is_the_rss_change_over_the_unit_change_since_the_previous_step() -> None:
    assert step_growth([1, 11, 111], [1000, 3000, 2000]) == [None, 200.0, -10.0]
    assert step_growth([5], [100]) == [None]


def test_slope_is_the_least_squares_fit_and_needs_two_distinct_units() -> None:
    assert slope([1, 2, 3], [10, 20, 30]) == 10.0
    assert slope([0, 10, 20], [0, 1000, 1000]) == 50.0
    assert slope([7], [100]) is None


def test_files_needed_counts_one_per_replica_of_every_step_spread_over_the_brokers() -> None:
    from broker.bench.scale_plan import FILES_MARGIN, files_needed

    needed = files_needed([1, 10, 100, 1000, 10000], 6, 3, 3, 1000)
    assert needed == (11111 + 6) * 1 + 334 + FILES_MARGIN, "every replica on one of 3 brokers, RF 3: one each"
    assert files_needed([1, 2], 6, 1, 1, 2) == (3 + 6) * 1 + 2 + FILES_MARGIN


def test_open_files_limits_raise_the_soft_limit_first_and_the_hard_one_only_when_too_low() -> None:
    from broker.bench.scale_plan import open_files_limits

    unlimited = -1
    assert open_files_limits(1000, 1024, 4096, unlimited) is None
    assert open_files_limits(1000, unlimited, unlimited, unlimited) is None
    assert open_files_limits(2000, 1024, 4096, unlimited) == (2000, 4096)
    assert open_files_limits(2000, 1024, unlimited, unlimited) == (2000, unlimited)
    assert open_files_limits(40_000, 20_000, 20_000, unlimited) == (40_000, 40_000)
