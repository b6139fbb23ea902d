"""The scale report: rows per sweep, RSS growth per unit (cluster partitions, connections), the JSON."""

from __future__ import annotations

import json

from rich.console import Console

from broker.bench.runner import RunResult
from broker.bench.scale import MIB, ScalePlan, Step, growth_lines, scale_document, scale_table
from broker.bench.spec import WorkloadSpec
from broker.bench.stats import LatencySummary

SPEC = WorkloadSpec(kind="produce", count=None, duration_s=1.0, load="raw")
PLAN = ScalePlan(SPEC, (1, 10), (1, 10), 6, 4)


def _step(sweep: str, partitions: int, connections: int, cluster_partitions: int, rss_mib: int) -> Step:
    result = RunResult(10_000, 1_000_000, 1.0, LatencySummary(5, 1.0, 2.0, 3.0, 4.0), requests=10, cpu_ns=10**7)
    return Step(sweep, partitions, connections, cluster_partitions, result, (rss_mib * MIB, rss_mib * MIB))


STEPS = [
    _step("connections", 6, 1, 6, 100),
    _step("connections", 6, 10, 6, 109),
    _step("partitions", 1, 4, 7, 110),
    _step("partitions", 10, 4, 17, 120),
]


def test_rss_growth_counts_every_broker_and_the_partitions_the_cluster_holds() -> None:
    document = json.loads(json.dumps(scale_document(PLAN, STEPS, "2 spawned brokers")))
    partitions = document["sweeps"]["partitions"]
    assert [step["rss_growth_bytes_per_unit"] for step in partitions["steps"]] == [None, 2 * 10 * MIB / 10]
    assert partitions["rss_growth_bytes_per_unit"] == 2 * MIB
    connections = document["sweeps"]["connections"]
    assert connections["rss_growth_bytes_per_unit"] == 2 * 9 * MIB / 9
    assert connections["steps"][1]["rss_bytes_per_broker"] == [109 * MIB, 109 * MIB]
    assert connections["steps"][0]["records_per_s"] == 10_000
    assert document["parameters"]["partitions_steps"] == [1, 10] and "security" not in document["parameters"]


def test_table_and_growth_lines_show_every_step() -> None:
    console = Console(width=200, record=True)
    console.print(scale_table(STEPS))
    for line in growth_lines(STEPS):
        console.print(line)
    text = console.export_text()
    assert text.count("connections │") + text.count("partitions  │") == 4
    assert "109 / 109" in text and "2,048.0" in text
    assert "RSS growth per partition (all replicas), least squares over the sweep: 2,048.0 KiB" in text


def test_open_files_limit_is_raised_to_what_the_steps_need() -> None:
    import resource

    from broker.bench.scale import ensure_open_files

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (200, hard))
    try:
        assert ensure_open_files(PLAN, 1) == (1 + 10 + 6) * 1 + 10 + 256, "RF 1 on one broker: every replica"
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (283, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
