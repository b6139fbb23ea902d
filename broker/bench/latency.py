"""Lone-request latency of the broker next to an aiohttp echo round trip, in one invocation.

``highwater bench latency --spawn 3 --replication-factor 3 --acks all`` measures, one
request at a time and paced (``--target-rate``, 200/s by default, ``--count`` requests):

- **echo**: ``POST /echo`` of the baseline server (``broker.bench.baseline``), an aiohttp
  process on loopback that reads the body and answers ``{}``; the body is a one-record
  batch of ``--record-size``, what a lone produce request carries. It is the floor of one
  HTTP round trip through Python and aiohttp on this machine, client and server alike;
- **broker**: the produce workload with one task in one process, ``linger_ms`` 0, so every
  record is its own request (``--load send``), or one-record pre-encoded batches
  (``--load raw``, without the producer library).

The echo runs first, then the broker, each in its own load-generator process on its own
(uv)loop, so both see the same client stack. With spawned brokers the CPU each one spent
per request over the run is printed too: the work behind the latency, which on a 2-core
host with three brokers is most of it (it varies with the host's load as latency does:
compare runs interleaved). The table shows p50/p99/p99.9 of both and the
ratio broker / echo per percentile; the target is an acks=all RF 3 p50 of at most
``TARGET_P50_RATIO`` times the echo's (sub-millisecond acks=all, relative to what the
machine can do at all).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any

import aiohttp
from rich.table import Table

from broker.bench.baseline import ECHO_PATH
from broker.bench.cpu import cpu_seconds
from broker.bench.invocation import Target, fresh_topic
from broker.bench.raw_load import raw_batch
from broker.bench.runner import Launch, ProcessGroup, RunResult, run_produce, run_producers
from broker.bench.spec import WorkloadSpec
from broker.bench.stats import LatencySummary
from broker.bench.workloads import AckSample, ProducerReport, quiet_logging, run_loop

TARGET_P50_RATIO = 2.3
"""acks=all RF 3 lone-request p50 over the echo's p50: the goal of the "sub-millisecond acks=all" work."""
ECHO_NAME = "echo: aiohttp round trip"


async def _echo(spec: WorkloadSpec, url: str, barrier: Any, progress: Any) -> ProducerReport:
    """``spec.count`` requests on one connection, one at a time, at ``spec.target_rate`` (0 = back to back)."""
    body = raw_batch(spec.record_size_bytes, 1, spec.compression)
    requests = spec.count or 0
    interval_ns = 1e9 / spec.target_rate if spec.target_rate else 0.0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) as session:
        async with session.post(url + ECHO_PATH, data=body) as reply:
            reply.raise_for_status()
            await reply.read()
        barrier.wait()
        started_ns = time.monotonic_ns()
        started_cpu_ns = time.process_time_ns()
        samples: list[AckSample] = []
        for sent in range(requests):
            delay_ns = started_ns + sent * interval_ns - time.monotonic_ns()
            if delay_ns > 0:
                await asyncio.sleep(delay_ns / 1e9)
            send_ns = time.monotonic_ns()
            async with session.post(url + ECHO_PATH, data=body) as reply:
                await reply.read()
                reply.raise_for_status()
            samples.append((0, sent, send_ns, time.monotonic_ns()))
            with progress.get_lock():
                progress.value += 1
        finished_ns = time.monotonic_ns()
        return ProducerReport(
            requests, started_ns, finished_ns, samples, requests, time.process_time_ns() - started_cpu_ns
        )


def echo_process(spec: WorkloadSpec, url: str, barrier: Any, progress: Any, results: Any) -> None:
    quiet_logging()
    try:
        report = run_loop(_echo(spec, url, barrier, progress))
    except Exception as error:  # noqa: BLE001 - the parent must hear of any failure, or it would wait forever
        barrier.abort()
        results.put(("error", 0, f"echo process: {error!r}"))
        return
    results.put(("producer", 0, report))


def run_echo(spec: WorkloadSpec, url: str, quiet: bool = False) -> RunResult:
    """The echo round trips of ``spec`` (its count, rate and record size) against the baseline server at ``url``."""
    group = ProcessGroup(1)
    launch = Launch("producer", echo_process, (spec, url, group.barrier, group.produced, group.results))
    return run_producers(spec, group, [launch], "echo", quiet)


def run_brokers(spec: WorkloadSpec, target: Target, quiet: bool = False) -> tuple[LatencySummary | None, list[float]]:
    """The broker run on a fresh topic, and, with spawned brokers, each one's CPU per request.

    The CPU window is the run itself (the topic is made before it): each broker's
    utime + stime from ``/proc``, its background work included (about 1 % of a core when
    idle, so ~50 µs a request at 200 requests/s).
    """
    topic = fresh_topic(spec, target.urls)
    before = [cpu_seconds(pid) for pid in target.pids]
    result = run_produce(spec, target.urls, topic, quiet)
    after = [cpu_seconds(pid) for pid in target.pids]
    return result.produce_ack, cpu_per_request_us(before, after, result.records)


def cpu_per_request_us(before_s: list[float], after_s: list[float], requests: int) -> list[float]:
    """Each broker's CPU seconds over a run of ``requests``, in µs per request, busiest first."""
    if requests <= 0:
        return []
    return sorted(((after - before) * 1e6 / requests for before, after in zip(before_s, after_s)), reverse=True)


def cpu_line(cpu_us: list[float]) -> str:
    figures = ", ".join(f"{value:.0f}" for value in cpu_us)
    return f"broker CPU per request, busiest first: {figures} µs (utime + stime over the run, background included)"


def lone_request_spec(spec: WorkloadSpec) -> WorkloadSpec:
    """``spec`` as a lone-request run: one task in one process, every record its own request and a sample."""
    lone = dataclasses.replace(spec, producers=1, processes=1, linger_ms=0, batch_records=1, sample_every=1)
    return lone.validate()


def ratios(broker: LatencySummary, echo: LatencySummary) -> tuple[float, float, float]:
    """Broker over echo at p50, p99 and p99.9."""
    return (broker.p50_ms / echo.p50_ms, broker.p99_ms / echo.p99_ms, broker.p999_ms / echo.p999_ms)


def comparison_table(name: str, broker: LatencySummary, echo: LatencySummary) -> Table:
    table = Table(title="lone-request latency (ms) next to an aiohttp echo round trip")
    for header in ("", "samples", "p50", "p99", "p99.9"):
        table.add_column(header, justify="left" if not header else "right")
    for label, summary in ((ECHO_NAME, echo), (name, broker)):
        figures = (summary.p50_ms, summary.p99_ms, summary.p999_ms)
        table.add_row(label, f"{summary.samples:,}", *(f"{value:.3f}" for value in figures))
    table.add_row("× echo", "", *(f"{value:.2f}" for value in ratios(broker, echo)))
    return table


def verdict(broker: LatencySummary, echo: LatencySummary) -> str:
    ratio = ratios(broker, echo)[0]
    met = "met" if ratio <= TARGET_P50_RATIO else "missed"
    return f"p50 {ratio:.2f}× the echo's (target for acks=all RF 3: ≤ {TARGET_P50_RATIO}×): {met}"


def comparison_document(
    name: str, spec: WorkloadSpec, broker: LatencySummary, echo: LatencySummary, cpu_us: list[float] | None = None
) -> dict:
    p50, p99, p999 = ratios(broker, echo)
    return {
        "name": name,
        "parameters": {
            "record_size_bytes": spec.record_size_bytes,
            "count": spec.count,
            "target_rate": spec.target_rate,
            "acks": spec.acks.value,
            "replication_factor": spec.replication_factor,
            "load": spec.load,
        },
        "broker_latency": broker.as_dict(),
        "echo_latency": echo.as_dict(),
        "ratio_to_echo": {"p50": p50, "p99": p99, "p999": p999},
        "target_p50_ratio": TARGET_P50_RATIO,
        "broker_cpu_us_per_request": cpu_us or [],
    }
