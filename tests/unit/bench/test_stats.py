"""Percentiles by nearest rank, and the median/min/max of repeated runs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.bench.stats import LatencySummary, median_latency, percentile, spread, summarize_latencies_ns


def test_nearest_rank_percentiles_of_one_to_a_hundred() -> None:
    values = list(range(1, 101))
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100
    assert percentile(values, 100) == 100
    assert percentile(values, 1) == 1


def test_p999_of_a_small_sample_is_its_largest_value() -> None:
    assert percentile([3, 5, 7], 99.9) == 7


@pytest.mark.parametrize("q", [0, -1, 100.5])
def test_rank_outside_the_range_is_refused(q: float) -> None:
    with pytest.raises(ValueError):
        percentile([1, 2, 3], q)


def test_empty_sample_has_no_percentile() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)


@given(
    st.lists(st.integers(min_value=-(10**9), max_value=10**9), min_size=1, max_size=300),
    st.floats(min_value=0.01, max_value=100),
)
def test_a_percentile_is_an_observed_value_with_enough_samples_at_or_below_it(values: list[int], q: float) -> None:
    ordered = sorted(values)
    result = percentile(ordered, q)
    assert result in values
    assert sum(1 for v in values if v <= result) >= q / 100 * len(values)


def test_latencies_in_ns_are_summarized_in_ms() -> None:
    summary = summarize_latencies_ns([i * 1_000_000 for i in range(1, 1001)])
    assert summary == LatencySummary(samples=1000, p50_ms=500.0, p99_ms=990.0, p999_ms=999.0, max_ms=1000.0)


def test_no_samples_no_summary() -> None:
    assert summarize_latencies_ns([]) is None


def test_spread_of_an_even_number_of_runs_uses_the_mean_of_the_middle_two() -> None:
    figure = spread([10.0, 40.0, 20.0, 30.0])
    assert (figure.median, figure.minimum, figure.maximum) == (25.0, 10.0, 40.0)


def test_spread_of_no_runs_is_refused() -> None:
    with pytest.raises(ValueError):
        spread([])


def test_median_latency_takes_each_percentile_on_its_own_and_skips_missing_runs() -> None:
    runs = [
        LatencySummary(10, 1.0, 9.0, 20.0, 30.0),
        None,
        LatencySummary(10, 3.0, 5.0, 10.0, 12.0),
        LatencySummary(10, 2.0, 7.0, 40.0, 41.0),
    ]
    assert median_latency(runs) == LatencySummary(30, 2.0, 7.0, 20.0, 41.0)
    assert median_latency([None, None]) is None
