"""One chaos run: workload on two topics, faults one after another, heal, settle, check.

Every run writes to two fresh topics on the cluster it is given, so runs can share a
cluster: ``<name>-all`` (idempotent acks=all producers plus a single-request acks=all
writer) and ``<name>-one`` (acks=1 producers, no idempotence). Each topic has its
readers. After the last fault the writers stop, the cluster settles (every replica
in sync at the same LEO), a fresh consumer reads each topic up to the HW, the replicas'
segment files are read below the HW, and the checker judges each topic.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import structlog

from tests.chaos.checker import CheckReport, check_topic, summary_table
from tests.chaos.cluster import ChaosCluster
from tests.chaos.faults import Fault, FaultTarget
from tests.chaos.history import UNKNOWN, History
from tests.chaos.workload import ProducerWriter, Reader, SingleRequestWriter, read_final_log

log = structlog.get_logger(__name__)

PARTITIONS = 3
PRODUCERS_PER_TOPIC = 2
READERS_PER_TOPIC = 2
HEAL_TIMEOUT_S = 40.0
SETTLE_TIMEOUT_S = 40.0


@dataclass
class RunResult:
    name: str
    history: History
    reports: list[CheckReport]
    faults: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    @property
    def violations(self) -> list[str]:
        return [v for report in self.reports for v in report.violations]

    def summary(self) -> str:
        lines = [f"chaos run {self.name}: {len(self.faults)} faults in {self.elapsed_s:.1f} s"]
        lines += [f"  fault: {fault}" for fault in self.faults]
        lines.append(summary_table(self.reports))
        if self.history.reader_errors:
            lines.append(f"reader errors (retried): {len(self.history.reader_errors)}")
        lines += [f"VIOLATION {violation}" for violation in self.violations]
        return "\n".join(lines)


FaultPlan = Callable[[], AsyncIterator[Fault]]


async def chaos_run(
    chaos: ChaosCluster, name: str, plan: FaultPlan, rng: random.Random, *, warmup_s: float = 1.0, quiet_s: float = 1.0
) -> RunResult:
    """Create the topics, run the workload through every fault of ``plan``, then check."""
    started = time.monotonic()
    topics = {f"{name}-all": "all", f"{name}-one": "1"}
    for topic in topics:
        await asyncio.to_thread(chaos.create_topic, topic, PARTITIONS)
    await asyncio.to_thread(chaos.wait_healed, list(topics), HEAL_TIMEOUT_S)
    history = History()
    stop_writers, stop_readers = asyncio.Event(), asyncio.Event()
    writers, readers = _workload(chaos, topics, history)
    writer_tasks = [asyncio.create_task(w.run(stop_writers)) for w in writers]
    reader_tasks = [asyncio.create_task(r.run(stop_readers)) for r in readers]
    try:
        # Not a wait for a condition: the workload's history before the first fault.
        await asyncio.sleep(warmup_s)
        target = FaultTarget(chaos, f"{name}-all", rng, history)
        async for fault in plan():
            description = await fault(target)
            history.faults.append(description)
            log.info("chaos.fault_injected", run=name, fault=description)
            await asyncio.to_thread(chaos.wait_healed, list(topics), HEAL_TIMEOUT_S)
            # Not a wait for a condition: the workload's history on the healed cluster, between faults.
            await asyncio.sleep(quiet_s)
    finally:
        chaos.heal_all()
        stop_writers.set()
        await asyncio.gather(*writer_tasks, return_exceptions=True)
    states = await asyncio.to_thread(chaos.wait_settled, list(topics), SETTLE_TIMEOUT_S)
    stop_readers.set()
    await asyncio.gather(*reader_tasks, return_exceptions=True)
    for op in history.writes:
        if op.outcome is None:
            op.complete(UNKNOWN, error="never completed")
    reports = []
    for topic, acks in topics.items():
        high_watermarks = [state.high_watermark for state in states[topic]]
        final_log = await read_final_log(chaos.servers, topic, high_watermarks)
        replica_bytes = {
            p: {b: chaos.replica_bytes_live(topic, p, b, hw) for b in chaos.brokers}
            for p, hw in enumerate(high_watermarks)
        }
        reports.append(check_topic(history, topic, final_log, replica_bytes, durable=acks == "all"))
    return RunResult(name, history, reports, list(history.faults), time.monotonic() - started)


def _workload(chaos: ChaosCluster, topics: dict[str, str], history: History) -> tuple[list, list[Reader]]:
    writers: list = []
    readers: list[Reader] = []
    for topic, acks in topics.items():
        for index in range(PRODUCERS_PER_TOPIC):
            writers.append(ProducerWriter(f"{topic}-p{index}", chaos.servers, topic, PARTITIONS, acks, history))
        if acks == "all":
            writers.append(SingleRequestWriter(f"{topic}-s0", chaos.servers, topic, PARTITIONS, history))
        for index in range(READERS_PER_TOPIC):
            readers.append(Reader(f"{topic}-r{index}", chaos.servers, topic, PARTITIONS, history))
    return writers, readers


def named_plan(*faults: Fault) -> FaultPlan:
    async def plan() -> AsyncIterator[Fault]:
        for fault in faults:
            yield fault

    return plan


def random_plan(rng: random.Random, faults: list[Fault], duration_s: float) -> FaultPlan:
    """Faults drawn with ``rng`` until ``duration_s`` has passed since the plan started."""

    async def plan() -> AsyncIterator[Fault]:
        deadline = time.monotonic() + duration_s
        while time.monotonic() < deadline:
            yield rng.choice(faults)

    return plan
