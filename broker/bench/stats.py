"""Pure statistics of a benchmark: latency percentiles and the spread of repeated runs.

Percentiles use the nearest-rank method (the value at rank ``ceil(q/100 * n)`` of the
sorted sample), so every reported latency is one that was actually observed, never an
interpolation between two; the p99.9 of fewer than 1000 samples is then simply the
largest. Repeats are summarised by their median (the middle run, or the mean of the
two middle runs), with the minimum and maximum so the reader sees the spread.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

NS_PER_MS = 1_000_000


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100) of an ascending, non-empty sample."""
    if not sorted_values:
        raise ValueError("a percentile of an empty sample is undefined")
    if not 0 < q <= 100:
        raise ValueError(f"percentile rank must be in (0, 100], not {q}")
    rank = math.ceil(round(q * len(sorted_values) / 100, 9))  # round: 99.9 * 1000 / 100 is 999.0000000000001
    return sorted_values[max(rank, 1) - 1]


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Percentiles of one latency sample, in milliseconds; ``samples`` says how many were taken."""

    samples: int
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "samples": self.samples,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "p999_ms": self.p999_ms,
            "max_ms": self.max_ms,
        }


def summarize_latencies_ns(latencies_ns: Sequence[int]) -> LatencySummary | None:
    """p50/p99/p99.9/max in ms of latencies given in ns; ``None`` when nothing was sampled."""
    if not latencies_ns:
        return None
    ordered = sorted(latencies_ns)
    return LatencySummary(
        samples=len(ordered),
        p50_ms=percentile(ordered, 50) / NS_PER_MS,
        p99_ms=percentile(ordered, 99) / NS_PER_MS,
        p999_ms=percentile(ordered, 99.9) / NS_PER_MS,
        max_ms=ordered[-1] / NS_PER_MS,
    )


@dataclass(frozen=True, slots=True)
class Spread:
    """Median, minimum and maximum of one figure over ``--repeat`` runs."""

    median: float
    minimum: float
    maximum: float

    def as_dict(self) -> dict[str, float]:
        return {"median": self.median, "min": self.minimum, "max": self.maximum}


def spread(values: Sequence[float]) -> Spread:
    if not values:
        raise ValueError("the spread of no runs is undefined")
    return Spread(statistics.median(values), min(values), max(values))


def median_latency(summaries: Sequence[LatencySummary | None]) -> LatencySummary | None:
    """Per percentile, the median over repeated runs (each percentile on its own, as in a table of medians)."""
    present = [summary for summary in summaries if summary is not None]
    if not present:
        return None
    return LatencySummary(
        samples=sum(summary.samples for summary in present),
        p50_ms=statistics.median(summary.p50_ms for summary in present),
        p99_ms=statistics.median(summary.p99_ms for summary in present),
        p999_ms=statistics.median(summary.p999_ms for summary in present),
        max_ms=max(summary.max_ms for summary in present),
    )
