"""Results of a benchmark as a rich table and as a JSON document.

A scenario's figures are the median of its ``--repeat`` runs, with min and max; each
latency percentile is the median of that percentile over the runs. When a baseline
scenario ran too, every throughput is also shown as a fraction of the baseline's
(median against median), the share of the Python + aiohttp ceiling the broker keeps.
"""

from __future__ import annotations

import dataclasses
import os
import platform
from dataclasses import dataclass
from typing import Any

from rich.table import Table

from broker.bench.runner import RunResult
from broker.bench.spec import WorkloadSpec
from broker.bench.stats import LatencySummary, Spread, median_latency, spread


@dataclass(frozen=True, slots=True)
class ScenarioSummary:
    name: str
    spec: WorkloadSpec
    runs: tuple[RunResult, ...]
    records_per_s: Spread
    mb_per_s: Spread
    produce_ack: LatencySummary | None
    end_to_end: LatencySummary | None
    hw_wait: LatencySummary | None
    records_per_request: float | None
    client_cpu_us_per_record: float | None
    """Median over runs of the load generators' CPU time per record (sum over processes / records)."""


def summarize(name: str, spec: WorkloadSpec, runs: list[RunResult]) -> ScenarioSummary:
    return ScenarioSummary(
        name=name,
        spec=spec,
        runs=tuple(runs),
        records_per_s=spread([run.records_per_s for run in runs]),
        mb_per_s=spread([run.mb_per_s for run in runs]),
        produce_ack=median_latency([run.produce_ack for run in runs]),
        end_to_end=median_latency([run.end_to_end for run in runs]),
        hw_wait=median_latency([run.hw_wait for run in runs]),
        records_per_request=_median_or_none([run.records_per_request for run in runs]),
        client_cpu_us_per_record=_median_or_none([run.client_cpu_us_per_record for run in runs]),
    )


def _median_or_none(values: list[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return spread(present).median if present else None


def ratio_to(summary: ScenarioSummary, baseline: ScenarioSummary | None) -> float | None:
    """The median records/s of ``summary`` over the baseline's; ``None`` without a baseline."""
    if baseline is None or baseline.records_per_s.median <= 0:
        return None
    return summary.records_per_s.median / baseline.records_per_s.median


def format_rate(figure: Spread, decimals: int = 0) -> str:
    """``median (min–max)``, e.g. ``81,234 (80,100–82,000)``; the median alone for a single run."""
    text = f"{figure.median:,.{decimals}f}"
    if figure.minimum != figure.maximum:
        text += f" ({figure.minimum:,.{decimals}f}–{figure.maximum:,.{decimals}f})"
    return text


def format_latency(summary: LatencySummary | None) -> str:
    """``p50 / p99 / p99.9`` in ms, or ``-`` when nothing was measured."""
    if summary is None:
        return "-"
    return " / ".join(_ms(value) for value in (summary.p50_ms, summary.p99_ms, summary.p999_ms))


def _ms(value: float) -> str:
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.0f}"


def results_table(summaries: list[ScenarioSummary], baseline: ScenarioSummary | None) -> Table:
    table = Table(title="highwater bench (latencies in ms: p50 / p99 / p99.9)")
    for header in (
        "scenario",
        "records/s",
        "MB/s",
        "× baseline",
        "records/request",
        "client CPU µs/record",
        "produce ack",
        "end to end",
        "wait for HW",
    ):
        table.add_column(header, justify="left" if header == "scenario" else "right")
    for summary in summaries:
        ratio = ratio_to(summary, baseline) if summary is not baseline else None
        table.add_row(
            summary.name,
            format_rate(summary.records_per_s),
            format_rate(summary.mb_per_s, 1),
            "-" if ratio is None else f"{ratio:.2f}",
            "-" if summary.records_per_request is None else f"{summary.records_per_request:,.0f}",
            "-" if summary.client_cpu_us_per_record is None else f"{summary.client_cpu_us_per_record:.2f}",
            format_latency(summary.produce_ack),
            format_latency(summary.end_to_end),
            format_latency(summary.hw_wait),
        )
    return table


def _latency_dict(summary: LatencySummary | None) -> dict[str, Any] | None:
    return None if summary is None else summary.as_dict()


def scenario_document(summary: ScenarioSummary, baseline: ScenarioSummary | None) -> dict[str, Any]:
    return {
        "name": summary.name,
        "parameters": {**dataclasses.asdict(summary.spec), "acks": summary.spec.acks.value},
        "records_per_s": summary.records_per_s.as_dict(),
        "mb_per_s": summary.mb_per_s.as_dict(),
        "ratio_to_baseline": ratio_to(summary, baseline) if summary is not baseline else None,
        "records_per_request": summary.records_per_request,
        "client_cpu_us_per_record": summary.client_cpu_us_per_record,
        "produce_ack_latency": _latency_dict(summary.produce_ack),
        "end_to_end_latency": _latency_dict(summary.end_to_end),
        "hw_wait_latency": _latency_dict(summary.hw_wait),
        "runs": [
            {
                "records": run.records,
                "value_bytes": run.value_bytes,
                "seconds": run.seconds,
                "records_per_s": run.records_per_s,
                "mb_per_s": run.mb_per_s,
                "requests": run.requests,
                "client_cpu_us_per_record": run.client_cpu_us_per_record,
                "produce_ack_latency": _latency_dict(run.produce_ack),
                "end_to_end_latency": _latency_dict(run.end_to_end),
                "hw_wait_latency": _latency_dict(run.hw_wait),
            }
            for run in summary.runs
        ],
    }


def results_document(summaries: list[ScenarioSummary], baseline: ScenarioSummary | None, target: str) -> dict[str, Any]:
    """Everything measured, with the machine it ran on, for ``--json``."""
    return {
        "target": target,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_1m_5m_15m": os.getloadavg(),
        },
        "scenarios": [scenario_document(summary, baseline) for summary in summaries],
    }
