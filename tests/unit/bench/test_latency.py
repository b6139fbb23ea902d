"""The lone-request comparison: ratios per percentile, the target's verdict, the table and the JSON."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from broker.bench.latency import (
    comparison_document,
    comparison_table,
    cpu_line,
    cpu_per_request_us,
    lone_request_spec,
    ratios,
    verdict,
)
from broker.bench.spec import WorkloadSpec
from broker.bench.stats import LatencySummary

ECHO = LatencySummary(2000, 0.5, 1.0, 2.0, 3.0)


def test_ratios_are_broker_over_echo_per_percentile() -> None:
    assert ratios(LatencySummary(2000, 1.0, 4.0, 5.0, 6.0), ECHO) == (2.0, 4.0, 2.5)


def test_verdict_meets_the_target_at_2_3_times_the_echo_p50_and_misses_above() -> None:
    assert verdict(LatencySummary(1, 1.15, 2.0, 2.0, 2.0), ECHO).endswith(": met")
    assert verdict(LatencySummary(1, 1.16, 2.0, 2.0, 2.0), ECHO).endswith(": missed")


def test_table_shows_both_runs_and_the_ratio_row() -> None:
    console = Console(width=200, record=True)
    console.print(comparison_table("produce lone", LatencySummary(2000, 1.0, 4.0, 5.0, 6.0), ECHO))
    text = console.export_text()
    assert "echo: aiohttp round trip" in text and "produce lone" in text
    assert "0.500" in text and "4.000" in text and "2.50" in text


def test_document_carries_both_summaries_and_ratios() -> None:
    spec = lone_request_spec(WorkloadSpec(kind="produce", replication_factor=3, min_insync_replicas=2))
    document = json.loads(json.dumps(comparison_document("x", spec, LatencySummary(9, 1.0, 2.0, 4.0, 5.0), ECHO)))
    assert document["ratio_to_echo"] == {"p50": 2.0, "p99": 2.0, "p999": 2.0}
    assert document["echo_latency"]["p50_ms"] == 0.5 and document["broker_latency"]["samples"] == 9
    assert document["parameters"]["replication_factor"] == 3


def test_a_lone_request_run_is_one_task_without_linger_and_samples_every_request() -> None:
    spec = lone_request_spec(WorkloadSpec(kind="produce", producers=4, processes=2, linger_ms=5, load="raw"))
    assert (spec.tasks, spec.linger_ms, spec.batch_records, spec.sample_every) == (1, 0, 1, 1)


def test_cpu_per_request_is_each_brokers_cpu_over_the_run_busiest_first() -> None:
    assert cpu_per_request_us([1.0, 2.0, 3.0], [1.3, 2.9, 3.3], 1000) == pytest.approx([900.0, 300.0, 300.0])
    assert cpu_per_request_us([1.0], [2.0], 0) == []


def test_the_cpu_line_and_document_carry_the_figures() -> None:
    assert cpu_line([812.4, 301.0]).startswith("broker CPU per request, busiest first: 812, 301 µs")
    spec = lone_request_spec(WorkloadSpec(kind="produce", count=10, replication_factor=3))
    document = comparison_document("x", spec, LatencySummary(9, 1.0, 2.0, 4.0, 5.0), ECHO, [812.4, 301.0])
    assert document["broker_cpu_us_per_request"] == [812.4, 301.0]
