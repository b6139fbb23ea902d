"""One measured run: start the load-generator processes, show progress, combine their reports.

The parent takes part in the start barrier, so every process begins at once after all
have connected; throughput is records over the span from the earliest start to the
latest finish among the processes that did the work. The parent keeps no event loop
of its own while processes run: it polls their shared counters for the progress bar
and drains the results queue (before joining, so no child blocks on a full pipe).
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from broker.bench import kafka_consume, kafka_load, raw_load, workloads
from broker.bench.spec import WorkloadSpec
from broker.bench.stats import LatencySummary, summarize_latencies_ns
from broker.bench.workloads import ConsumerReport, ProducerReport

BARRIER_TIMEOUT_S = 120.0
POLL_S = 0.1


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run's figures; ``value_bytes`` counts record values only (what MB/s is of)."""

    records: int
    value_bytes: int
    seconds: float
    produce_ack: LatencySummary | None = None
    end_to_end: LatencySummary | None = None
    hw_wait: LatencySummary | None = None
    requests: int | None = None
    """Produce requests the run sent, when it produced."""
    cpu_ns: int | None = None
    """CPU time of the load-generator processes together (``time.process_time_ns``), when they report it."""

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / self.seconds / 1e6

    @property
    def records_per_request(self) -> float | None:
        return self.records / self.requests if self.requests else None

    @property
    def client_cpu_us_per_record(self) -> float | None:
        """The load generator's CPU cost of one record: what the client library (or the raw load) spends."""
        return self.cpu_ns / 1e3 / self.records if self.cpu_ns and self.records else None


@dataclass
class Launch:
    role: str
    target: Callable[..., None]
    args: tuple


def span_s(reports: list[Any]) -> float:
    return (max(r.finished_ns for r in reports) - min(r.started_ns for r in reports)) / 1e9


class ProcessGroup:
    """Processes that share one barrier, one progress counter and one results queue."""

    def __init__(self, parties: int) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.barrier = self.context.Barrier(parties + 1, timeout=BARRIER_TIMEOUT_S)
        self.results = self.context.Queue()
        self.produced = self.context.Value("q", 0)
        self.consumed = self.context.Value("q", 0)
        self.expected = self.context.Value("q", -1)
        self.processes: list[Any] = []

    def start(self, launches: list[Launch]) -> None:
        for launch in launches:
            process = self.context.Process(target=launch.target, args=launch.args, daemon=True)
            process.start()
            self.processes.append(process)

    def run(
        self, label: str, total: int | None, counter: Any, on_report: Callable[[str, Any], None], quiet: bool
    ) -> None:
        """Release the barrier, then collect one report per process while showing progress."""
        try:
            self.barrier.wait()
        except Exception:
            self._raise_reported_error()
            raise
        pending = len(self.processes)
        columns = [TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
        with Progress(*columns, disable=quiet, transient=True) as progress:
            bar = progress.add_task(label, total=total)
            while pending:
                progress.update(bar, completed=counter.value)
                try:
                    role, _, report = self.results.get(timeout=POLL_S)
                except queue.Empty:
                    self._check_alive()
                    continue
                if role == "error":
                    raise RuntimeError(report)
                on_report(role, report)
                pending -= 1
        for process in self.processes:
            process.join(30)

    def _check_alive(self) -> None:
        for process in self.processes:
            if process.exitcode not in (None, 0):
                raise RuntimeError(f"a load-generator process exited with status {process.exitcode}")

    def _raise_reported_error(self) -> None:
        try:
            role, _, report = self.results.get(timeout=5)
        except queue.Empty:
            return
        if role == "error":
            raise RuntimeError(report)

    def stop(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
                process.join(5)


def _producer_launches(group: ProcessGroup, spec: WorkloadSpec, urls: list[str], topic: str) -> list[Launch]:
    """``raw`` and ``kafka`` have their own generators; ``send`` and ``many`` are the producer library's loop."""
    targets = {"raw": raw_load.raw_produce_process, "kafka": kafka_load.kafka_produce_process}
    target = targets.get(spec.load, workloads.produce_process)
    return [
        Launch(
            "producer",
            target,
            (spec, urls, topic, index, group.barrier, group.produced, group.results),
        )
        for index in range(spec.processes)
    ]


def _consumer_launches(
    group: ProcessGroup, spec: WorkloadSpec, urls: list[str], topic: str, processes: int, sample: bool
) -> list[Launch]:
    if spec.load == "kafka":
        return [
            Launch(
                "consumer",
                kafka_consume.kafka_consume_process,
                (
                    urls,
                    topic,
                    [p for p in range(spec.partitions) if p % processes == index],
                    index,
                    group.expected,
                    group.barrier,
                    group.consumed,
                    group.results,
                ),
            )
            for index in range(processes)
        ]
    return [
        Launch(
            "consumer",
            workloads.consume_process,
            (
                urls,
                topic,
                [p for p in range(spec.partitions) if p % processes == index],
                index,
                group.expected,
                group.barrier,
                group.consumed,
                group.results,
                sample,
                spec.security,
            ),
        )
        for index in range(processes)
    ]


def run_produce(spec: WorkloadSpec, urls: list[str], topic: str, quiet: bool = False) -> RunResult:
    group = ProcessGroup(spec.processes)
    return run_producers(spec, group, _producer_launches(group, spec, urls, topic), f"produce {topic}", quiet)


def run_producers(
    spec: WorkloadSpec, group: ProcessGroup, launches: list[Launch], label: str, quiet: bool
) -> RunResult:
    """Run producer processes to the end; records, bytes, span and acknowledgement latencies of all of them."""
    reports: list[ProducerReport] = []
    try:
        group.start(launches)
        group.run(label, spec.count, group.produced, lambda _, report: reports.append(report), quiet)
    finally:
        group.stop()
    records = sum(r.records for r in reports)
    latencies = [ack_ns - send_ns for r in reports for _, _, send_ns, ack_ns in r.samples]
    return RunResult(
        records,
        records * spec.record_size_bytes,
        span_s(reports),
        summarize_latencies_ns(latencies),
        requests=sum(r.requests for r in reports),
        cpu_ns=sum(r.cpu_ns for r in reports),
    )


def run_consume(spec: WorkloadSpec, urls: list[str], topic: str, quiet: bool = False) -> RunResult:
    """Read back ``spec.count`` records (already in ``topic``) from offset 0 with ``spec.processes`` consumers."""
    processes = min(spec.processes, spec.partitions)
    group = ProcessGroup(processes)
    group.expected.value = spec.count
    reports: list[ConsumerReport] = []
    try:
        group.start(_consumer_launches(group, spec, urls, topic, processes, sample=False))
        group.run(f"consume {topic}", spec.count, group.consumed, lambda _, report: reports.append(report), quiet)
    finally:
        group.stop()
    return RunResult(sum(r.records for r in reports), sum(r.value_bytes for r in reports), span_s(reports))


def run_end_to_end(spec: WorkloadSpec, urls: list[str], topic: str, quiet: bool = False) -> RunResult:
    """Producers and one consumer at once; latencies joined by (partition, offset) of the sampled records."""
    group = ProcessGroup(spec.processes + 1)
    if spec.count is not None:
        group.expected.value = spec.count
    producers: list[ProducerReport] = []
    consumers: list[ConsumerReport] = []

    def on_report(role: str, report: Any) -> None:
        (producers if role == "producer" else consumers).append(report)
        if role == "producer" and len(producers) == spec.processes:
            group.expected.value = sum(r.records for r in producers)

    try:
        group.start(
            _consumer_launches(group, spec, urls, topic, 1, sample=True) + _producer_launches(group, spec, urls, topic)
        )
        group.run(f"e2e {topic}", spec.count, group.consumed, on_report, quiet)
    finally:
        group.stop()
    return end_to_end_result(spec, producers, consumers)


def end_to_end_result(
    spec: WorkloadSpec, producers: list[ProducerReport], consumers: list[ConsumerReport]
) -> RunResult:
    """Join acknowledgements and consumer sightings of the same sampled records.

    ``end_to_end`` = seen − send; ``hw_wait`` = seen − ack: how long after its
    acknowledgement the consumer got the record, which with acks=1 is mostly the wait
    for the high watermark to pass it (with acks=all the ack already waited for it).
    """
    acked = {(p, o): ack_ns for r in producers for p, o, _, ack_ns in r.samples}
    seen = [(p, o, send_ns, seen_ns) for r in consumers for p, o, send_ns, seen_ns in r.samples]
    records = sum(r.records for r in producers)
    return RunResult(
        records,
        records * spec.record_size_bytes,
        span_s(producers),
        summarize_latencies_ns([ack_ns - send_ns for r in producers for _, _, send_ns, ack_ns in r.samples]),
        summarize_latencies_ns([seen_ns - send_ns for _, _, send_ns, seen_ns in seen]),
        summarize_latencies_ns([seen_ns - acked[(p, o)] for p, o, _, seen_ns in seen if (p, o) in acked]),
        requests=sum(r.requests for r in producers),
        cpu_ns=sum(r.cpu_ns for r in producers),
    )
