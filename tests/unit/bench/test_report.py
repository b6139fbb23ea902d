"""The results table, the JSON document, the baseline ratio, and the e2e join of samples."""

from __future__ import annotations

import json

from rich.console import Console

from broker.bench.report import format_latency, format_rate, ratio_to, results_document, results_table, summarize
from broker.bench.runner import RunResult, end_to_end_result
from broker.bench.spec import WorkloadSpec
from broker.bench.stats import LatencySummary, Spread
from broker.bench.workloads import ConsumerReport, ProducerReport

SPEC = WorkloadSpec(kind="produce", record_size_bytes=100)


def _run(records_per_s: float, ack_p50_ms: float | None = None) -> RunResult:
    ack = None if ack_p50_ms is None else LatencySummary(8, ack_p50_ms, ack_p50_ms * 2, ack_p50_ms * 3, ack_p50_ms * 4)
    return RunResult(records=int(records_per_s), value_bytes=int(records_per_s) * 100, seconds=1.0, produce_ack=ack)


def test_rates_show_the_median_and_the_range_only_when_runs_differ() -> None:
    assert format_rate(Spread(81234.4, 80100.0, 82000.0)) == "81,234 (80,100–82,000)"
    assert format_rate(Spread(12.345, 12.345, 12.345), 1) == "12.3"


def test_latencies_read_p50_p99_p999_with_precision_that_fits_the_magnitude() -> None:
    assert format_latency(LatencySummary(5, 0.5, 2.345, 12.7, 20.0)) == "0.50 / 2.35 / 13"
    assert format_latency(None) == "-"


def test_summary_is_the_median_run_with_its_range() -> None:
    summary = summarize("produce", SPEC, [_run(100_000, 2.0), _run(300_000, 6.0), _run(200_000, 4.0)])
    assert summary.records_per_s == Spread(200_000, 100_000, 300_000)
    assert summary.mb_per_s.median == 20.0
    assert summary.produce_ack is not None and summary.produce_ack.p50_ms == 4.0
    assert summary.end_to_end is None


def test_ratio_to_baseline_compares_medians_and_is_absent_without_one() -> None:
    broker = summarize("produce", SPEC, [_run(50_000)])
    baseline = summarize("baseline", SPEC, [_run(200_000), _run(250_000)])
    assert ratio_to(broker, baseline) == 50_000 / 225_000
    assert ratio_to(broker, None) is None


def test_table_lists_every_scenario_with_its_ratio() -> None:
    baseline = summarize("baseline", SPEC, [_run(200_000)])
    broker = summarize("produce 100 B", SPEC, [_run(50_000, 1.5)])
    console = Console(width=200, record=True)
    console.print(results_table([baseline, broker], baseline))
    text = console.export_text()
    assert "produce 100 B" in text and "50,000" in text and "0.25" in text and "1.50 / 3.00 / 4.50" in text


def test_json_document_round_trips_with_parameters_runs_and_ratio() -> None:
    baseline = summarize("baseline", SPEC, [_run(200_000)])
    broker = summarize("produce", SPEC, [_run(50_000, 1.0), _run(70_000, 3.0)])
    document = json.loads(json.dumps(results_document([baseline, broker], baseline, "2 spawned brokers")))
    produce = document["scenarios"][1]
    assert produce["records_per_s"] == {"median": 60_000, "min": 50_000, "max": 70_000}
    assert produce["ratio_to_baseline"] == 0.3
    assert produce["parameters"]["record_size_bytes"] == 100
    assert produce["parameters"]["acks"] == "all"
    assert [run["records"] for run in produce["runs"]] == [50_000, 70_000]
    assert produce["produce_ack_latency"]["p50_ms"] == 2.0
    assert document["scenarios"][0]["ratio_to_baseline"] is None
    assert document["machine"]["cpus"] >= 1


def test_end_to_end_joins_acks_and_sightings_by_partition_and_offset() -> None:
    ms = 1_000_000
    producer = ProducerReport(
        records=1000,
        started_ns=0,
        finished_ns=2_000 * ms,
        samples=[(0, 10, 0, 4 * ms), (1, 10, 0, 6 * ms), (0, 11, ms, 3 * ms)],
    )
    consumer = ConsumerReport(
        records=1000,
        value_bytes=100_000,
        started_ns=0,
        finished_ns=2_000 * ms,
        samples=[(0, 10, 0, 9 * ms), (1, 10, 0, 7 * ms), (2, 99, 0, 50 * ms)],
    )
    result = end_to_end_result(WorkloadSpec(kind="e2e"), [producer], [consumer])
    assert result.records_per_s == 500.0
    assert result.produce_ack is not None and result.produce_ack.samples == 3
    assert result.end_to_end is not None and result.end_to_end.samples == 3
    assert result.end_to_end.max_ms == 50.0
    assert result.hw_wait is not None and result.hw_wait.samples == 2
    assert (result.hw_wait.p50_ms, result.hw_wait.max_ms) == (1.0, 5.0)


def test_client_cpu_per_record_is_the_processes_cpu_over_the_records_as_a_column_and_a_field() -> None:
    runs = [
        RunResult(records=100_000, value_bytes=10_000_000, seconds=1.0, cpu_ns=250_000_000),
        RunResult(records=100_000, value_bytes=10_000_000, seconds=1.0, cpu_ns=350_000_000),
    ]
    summary = summarize("produce 100 B RF3 acks=all raw", SPEC, runs)
    assert summary.client_cpu_us_per_record == 3.0, "median of 2.5 and 3.5 µs"
    console = Console(width=250, record=True)
    console.print(results_table([summary], None))
    text = console.export_text()
    assert "client CPU µs/record" in text and "3.00" in text
    document = results_document([summary], None, "1 spawned brokers")
    assert document["scenarios"][0]["client_cpu_us_per_record"] == 3.0
    assert [run["client_cpu_us_per_record"] for run in document["scenarios"][0]["runs"]] == [2.5, 3.5]


def test_client_cpu_is_absent_when_no_process_reported_it() -> None:
    summary = summarize("consume", SPEC, [_run(1000)])
    assert summary.client_cpu_us_per_record is None
