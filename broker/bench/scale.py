"""``highwater bench scale``: how throughput, latency and broker memory grow with partitions and connections.

Against ``--spawn N`` brokers (their pids are known, so their RSS can be read), two sweeps
of short fixed-duration raw produce runs (``broker.bench.raw_load``, one process):

1. **connections** (``--connections 1,10,100,1000``): one topic of ``--fixed-partitions``
   partitions, created once; step ``C`` posts from ``C`` concurrent connections;
2. **partitions** (``--partitions 1,10,100,1000,10000``): step ``P`` creates a fresh topic of
   ``P`` partitions (RF ``--replication-factor``) and posts from ``--fixed-connections``.

The connections sweep runs first, so the idle partitions the partitions sweep leaves
behind (topics are not deleted: deletion would not give memory back to the OS anyway) do
not weigh on it. Every step waits, before it is timed, until each partition of its topic
has a leader and a full ISR (``cluster.prepare_topic``, with a progress bar: thousands of
partitions take a while). At the end of each step the ``VmRSS`` of every broker is read.
RSS growth per partition counts the partitions the cluster holds (this step's topic plus
the earlier steps' and the connections sweep's), all replicas together; per connection,
the connections of the step.

Every step's topic stays, and each partition replica keeps one file open on its broker
(``scale_plan.FILES_PER_REPLICA``): 10 000 partitions with RF 3 on 3 brokers are 10 000
descriptors per broker. ``ensure_open_files`` raises the open-files limit the brokers inherit
to what the run needs, or refuses the run before it starts.

The table (rich) shows each step as it finishes; ``--json`` writes every figure and
``--plot-dir`` PNGs (``broker.bench.scale_plot``): records/s, ack p99 and RSS per broker,
against partitions and against connections.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import platform
import resource
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from broker.bench.cluster import prepare_topic
from broker.bench.rss import rss_bytes
from broker.bench.runner import RunResult, run_produce
from broker.bench.scale_plan import FILES_PER_REPLICA, files_needed, open_files_limits, slope, step_growth
from broker.bench.spec import SpecError, WorkloadSpec
from broker.cli.dev import DevBroker

TOPIC_READY_TIMEOUT_S = 900.0
MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Step:
    """One step's figures; ``cluster_partitions`` counts every partition the cluster holds at its end."""

    sweep: str
    partitions: int
    connections: int
    cluster_partitions: int
    result: RunResult
    rss_bytes: tuple[int, ...]
    """Per broker, in node id order."""

    @property
    def units(self) -> int:
        return self.cluster_partitions if self.sweep == "partitions" else self.connections

    @property
    def x(self) -> int:
        return self.partitions if self.sweep == "partitions" else self.connections


@dataclass(frozen=True)
class ScalePlan:
    spec: WorkloadSpec
    """The raw produce of every step (``partitions`` and ``producers`` are set per step)."""
    partitions: tuple[int, ...]
    connections: tuple[int, ...]
    fixed_partitions: int
    fixed_connections: int


def ensure_open_files(plan: ScalePlan, brokers: int) -> int:
    """Raise this process's open-files limit (the spawned brokers inherit it) to what the run needs.

    Refused with ``SpecError`` before anything starts when it cannot be raised enough (a broker
    out of descriptors would fail in the middle of the largest step instead); the files needed.
    """
    needed = files_needed(
        plan.partitions, plan.fixed_partitions, plan.spec.replication_factor, brokers, max(plan.connections)
    )
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limits = open_files_limits(needed, soft, hard, resource.RLIM_INFINITY)
    if limits is not None:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, limits)
        except (ValueError, OSError):
            raise SpecError(
                f"the steps need about {needed:,} open files per broker ({FILES_PER_REPLICA} per partition replica, "
                f"every step's topic kept); the limit is {hard:,}: raise it (ulimit -Hn) or lower --partitions"
            ) from None
    return needed


def _ready_topic(url: str, spec: WorkloadSpec, partitions: int, label: str, quiet: bool) -> str:
    columns = [TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    with Progress(*columns, disable=quiet, transient=True) as progress:
        bar = progress.add_task(label, total=partitions)
        return asyncio.run(
            prepare_topic(
                url,
                partitions,
                spec.replication_factor,
                spec.min_insync_replicas,
                prefix="scale",
                timeout_s=TOPIC_READY_TIMEOUT_S,
                security=spec.security,
                on_progress=lambda ready: progress.update(bar, completed=ready),
            )
        )


def _step(
    sweep: str, spec: WorkloadSpec, brokers: list[DevBroker], topic: str, cluster_partitions: int, quiet: bool
) -> Step:
    result = run_produce(spec, [broker.url for broker in brokers], topic, quiet)
    rss = tuple(rss_bytes(broker.process.pid) for broker in brokers)
    return Step(sweep, spec.partitions, spec.producers, cluster_partitions, result, rss)


def run_scale(plan: ScalePlan, brokers: list[DevBroker], console: Console, quiet: bool) -> list[Step]:
    """Both sweeps, printing each step's row as it finishes."""
    url = brokers[0].url
    steps: list[Step] = []
    total = len(plan.connections) + len(plan.partitions)
    cluster_partitions = 0

    def announce(step: Step) -> None:
        steps.append(step)
        console.print(f"[{len(steps)}/{total}] {step_line(step)}")

    if plan.connections:
        spec = dataclasses.replace(plan.spec, partitions=plan.fixed_partitions)
        topic = _ready_topic(url, spec, plan.fixed_partitions, f"topic of {plan.fixed_partitions} partitions", quiet)
        cluster_partitions += plan.fixed_partitions
        for connections in plan.connections:
            step_spec = dataclasses.replace(spec, producers=connections).validate(len(brokers))
            announce(_step("connections", step_spec, brokers, topic, cluster_partitions, quiet))
    for partitions in plan.partitions:
        step_spec = dataclasses.replace(plan.spec, partitions=partitions, producers=plan.fixed_connections).validate(
            len(brokers)
        )
        topic = _ready_topic(url, step_spec, partitions, f"topic of {partitions:,} partitions", quiet)
        cluster_partitions += partitions
        announce(_step("partitions", step_spec, brokers, topic, cluster_partitions, quiet))
    return steps


def _ms(summary: Any, field: str) -> str:
    return "-" if summary is None else f"{getattr(summary, field):.2f}"


def step_line(step: Step) -> str:
    ack = step.result.produce_ack
    return (
        f"{step.sweep}: {step.partitions:,} partitions, {step.connections:,} connections: "
        f"{step.result.records_per_s:,.0f} records/s, ack p50 {_ms(ack, 'p50_ms')} ms, p99 {_ms(ack, 'p99_ms')} ms, "
        f"RSS {' / '.join(f'{value / MIB:.0f}' for value in step.rss_bytes)} MiB"
    )


def _sweep(steps: Iterable[Step], sweep: str) -> list[Step]:
    return [step for step in steps if step.sweep == sweep]


def growth(steps: list[Step]) -> tuple[list[float | None], float | None]:
    """Per step and fitted over the sweep: bytes of summed broker RSS per unit (partition or connection)."""
    units = [step.units for step in steps]
    totals = [sum(step.rss_bytes) for step in steps]
    return step_growth(units, totals), slope(units, totals)


def scale_table(steps: list[Step]) -> Table:
    table = Table(title="highwater bench scale (raw produce; latencies in ms; RSS per broker)")
    headers = ("sweep", "partitions", "connections", "records/s", "ack p50", "ack p99", "RSS MiB", "Δ RSS KiB/unit")
    for header in headers:
        table.add_column(header, justify="left" if header == "sweep" else "right")
    for sweep in ("connections", "partitions"):
        selected = _sweep(steps, sweep)
        for step, gained in zip(selected, growth(selected)[0]):
            ack = step.result.produce_ack
            table.add_row(
                sweep,
                f"{step.partitions:,}",
                f"{step.connections:,}",
                f"{step.result.records_per_s:,.0f}",
                _ms(ack, "p50_ms"),
                _ms(ack, "p99_ms"),
                " / ".join(f"{value / MIB:.0f}" for value in step.rss_bytes),
                "-" if gained is None else f"{gained / 1024:,.1f}",
            )
    return table


def growth_lines(steps: list[Step]) -> list[str]:
    lines = []
    for sweep, unit in (("partitions", "partition (all replicas)"), ("connections", "connection")):
        fitted = growth(_sweep(steps, sweep))[1]
        if fitted is not None:
            lines.append(f"RSS growth per {unit}, least squares over the sweep: {fitted / 1024:,.1f} KiB")
    return lines


def scale_document(plan: ScalePlan, steps: list[Step], target: str) -> dict[str, Any]:
    sweeps: dict[str, Any] = {}
    for sweep in ("connections", "partitions"):
        selected = _sweep(steps, sweep)
        per_step, fitted = growth(selected)
        sweeps[sweep] = {
            "rss_growth_bytes_per_unit": fitted,
            "steps": [
                {
                    "partitions": step.partitions,
                    "connections": step.connections,
                    "cluster_partitions": step.cluster_partitions,
                    "records": step.result.records,
                    "seconds": step.result.seconds,
                    "records_per_s": step.result.records_per_s,
                    "mb_per_s": step.result.mb_per_s,
                    "requests": step.result.requests,
                    "client_cpu_us_per_record": step.result.client_cpu_us_per_record,
                    "produce_ack_latency": None
                    if step.result.produce_ack is None
                    else step.result.produce_ack.as_dict(),
                    "rss_bytes_per_broker": list(step.rss_bytes),
                    "rss_growth_bytes_per_unit": gained,
                }
                for step, gained in zip(selected, per_step)
            ],
        }
    parameters = {**dataclasses.asdict(plan.spec), "acks": plan.spec.acks.value}
    parameters.pop("security")
    return {
        "target": target,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "parameters": {
            **parameters,
            "partitions_steps": list(plan.partitions),
            "connections_steps": list(plan.connections),
            "fixed_partitions": plan.fixed_partitions,
            "fixed_connections": plan.fixed_connections,
        },
        "sweeps": sweeps,
    }


def write_plots(steps: list[Step], plot_dir: Path) -> list[Path]:
    """Records/s, ack p99 and RSS per broker against each swept dimension, as PNGs in ``plot_dir``."""
    from broker.bench.scale_plot import write_plot

    paths = []
    for sweep in ("partitions", "connections"):
        selected = _sweep(steps, sweep)
        if not selected:
            continue
        xs = [step.x for step in selected]
        p99 = [step.result.produce_ack.p99_ms if step.result.produce_ack else float("nan") for step in selected]
        brokers = len(selected[0].rss_bytes)
        rss = {f"broker {index + 1}": [step.rss_bytes[index] / MIB for step in selected] for index in range(brokers)}
        for measure, label, series in (
            ("throughput", "records/s", {"records/s": [step.result.records_per_s for step in selected]}),
            ("p99", "ack p99 (ms)", {"ack p99": p99}),
            ("rss", "RSS (MiB)", rss),
        ):
            path = plot_dir / f"scale-{measure}-vs-{sweep}.png"
            paths.append(write_plot(path, f"{label} vs {sweep}", sweep, label, xs, series))
    return paths
