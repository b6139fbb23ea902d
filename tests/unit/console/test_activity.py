"""Traffic counters turned into rates, bounded histories, and the cluster-wide merge (pure)."""

from __future__ import annotations

import pytest

from broker.console.activity import (
    ActivitySampler,
    Rates,
    Traffic,
    TrafficCounters,
    merge_histories,
    merge_reports,
    rates_between,
)


def test_rates_are_growth_per_second() -> None:
    earlier = Traffic(100, 1000, 10, 500)
    later = Traffic(300, 5000, 60, 2500)
    assert rates_between(earlier, later, 2000) == Rates(100.0, 2000.0, 25.0, 1000.0)


def test_no_time_elapsed_gives_zero_rather_than_dividing_by_it() -> None:
    assert rates_between(Traffic(), Traffic(5, 5, 5, 5), 0) == Rates()


def test_the_first_sample_is_a_baseline_and_the_next_ones_are_rates() -> None:
    counters = TrafficCounters()
    sampler = ActivitySampler()
    counters.produced("t", 50, 5000)
    sampler.sample(counters, 1000)
    assert sampler.latest["t"] == Rates()
    counters.produced("t", 100, 10_000)
    counters.fetched("t", 20, 2000)
    sampler.sample(counters, 2000)
    assert sampler.latest["t"] == Rates(100.0, 10_000.0, 20.0, 2000.0)
    sampler.sample(counters, 3000)
    assert sampler.latest["t"] == Rates()
    assert [(p.time_ms, p.produce_records_per_s) for p in sampler.history["t"]] == [(1000, 0), (2000, 100), (3000, 0)]


def test_a_topic_first_served_between_samples_counts_all_its_traffic_in_that_interval() -> None:
    counters, sampler = TrafficCounters(), ActivitySampler()
    sampler.sample(counters, 0)
    counters.produced("new", 10, 100)
    sampler.sample(counters, 1000)
    assert sampler.latest["new"] == Rates(10.0, 100.0, 0.0, 0.0)
    counters.produced("new", 20, 200)
    sampler.sample(counters, 2000)
    assert sampler.latest["new"].produce_records_per_s == 20.0


def test_history_is_bounded_and_a_forgotten_topic_leaves_it() -> None:
    counters, sampler = TrafficCounters(), ActivitySampler(history_samples=4)
    counters.produced("t", 1, 1)
    for step in range(10):
        sampler.sample(counters, step * 1000)
    assert [p.time_ms for p in sampler.history["t"]] == [6000, 7000, 8000, 9000]
    counters.forget("t")
    sampler.sample(counters, 10_000)
    assert "t" not in sampler.history
    assert sampler.latest == {}


def test_totals_sum_the_topics() -> None:
    counters, sampler = TrafficCounters(), ActivitySampler()
    sampler.sample(counters, 0)
    counters.produced("a", 10, 100)
    counters.produced("b", 30, 300)
    counters.produced("a", 0, 0)
    sampler.sample(counters, 0)
    counters.produced("a", 10, 100)
    counters.produced("b", 30, 300)
    sampler.sample(counters, 1000)
    assert sampler.totals == Rates(40.0, 400.0, 0.0, 0.0)


def test_histories_of_brokers_are_summed_per_interval_slot() -> None:
    one = [{"time_ms": 1100, "produce_records_per_s": 5, "fetch_records_per_s": 1}]
    two = [
        {"time_ms": 1900, "produce_records_per_s": 7, "fetch_records_per_s": 2},
        {"time_ms": 2100, "produce_records_per_s": 3, "fetch_records_per_s": 0},
    ]
    assert merge_histories([one, two], 1000) == [
        {"time_ms": 2000, "produce_records_per_s": 12.0, "fetch_records_per_s": 3.0},
        {"time_ms": 3000, "produce_records_per_s": 3.0, "fetch_records_per_s": 0.0},
    ]


def report(broker_id: int, produce: float, topics: dict) -> dict:
    return {**Rates(produce, produce * 10, 0, 0).to_body(), "broker_id": broker_id, "time_ms": 0, "topics": topics}


def test_the_merge_sums_a_topic_over_brokers_marks_the_silent_and_lists_only_visible_topics() -> None:
    history = [{"time_ms": 500, "produce_records_per_s": 4, "fetch_records_per_s": 0}]
    topic = {**Rates(4, 40, 1, 10).to_body(), "history": history}
    reports = {
        2: report(2, 8, {"a": topic, "secret": topic}),
        1: report(1, 4, {"a": topic}),
        3: None,
    }
    brokers, topics = merge_reports(reports, 1000, ["a", "quiet"])
    assert [(b["broker_id"], b["reachable"], b["produce_records_per_s"]) for b in brokers] == [
        (1, True, 4.0),
        (2, True, 8.0),
        (3, False, 0.0),
    ]
    assert [t["topic_name"] for t in topics] == ["a", "quiet"]
    assert topics[0]["produce_records_per_s"] == pytest.approx(8.0)
    assert topics[0]["fetch_bytes_per_s"] == pytest.approx(20.0)
    assert topics[0]["history"] == [{"time_ms": 1000, "produce_records_per_s": 8.0, "fetch_records_per_s": 0.0}]
    assert topics[1] == {"topic_name": "quiet", **Rates().to_body(), "history": []}
