"""One transactional chaos run: transactional writers, an exactly-once transform and readers at
both isolation levels under faults; then settle, read, check.

The writers commit and abort transactions on ``txn-in``; the transform reads it
``read_committed`` and writes ``txn-out`` with its input offsets in the same transactions;
two HTTP readers (``read_committed``, ``read_uncommitted``) and a librdkafka
``read_committed`` reader follow ``txn-in``. Faults target partition 0 of ``txn-in`` and
the first writer's transaction coordinator. After the last one the writers stop (each
ends its transaction), the cluster settles until every partition is stable (LSO = HW,
so even a transaction a lost producer abandoned has been aborted by its timeout), fresh
readers read both topics at both isolation levels, and ``txn_checker`` judges them.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from tests.chaos.checker import CheckReport, summary_table
from tests.chaos.cluster import ChaosCluster
from tests.chaos.faults import FAULTS, Fault, FaultTarget, delay_markers, kill_transaction_coordinator
from tests.chaos.history import COMMITTED, READ_COMMITTED, READ_UNCOMMITTED, History
from tests.chaos.run import FaultPlan
from tests.chaos.txn_checker import (
    TRANSFORM_COLUMNS,
    TXN_COLUMNS,
    check_replicas_agree,
    check_transactions,
    check_transform,
)
from tests.chaos.txn_workload import KafkaReader, TransactionalWriter, TransformJob, committed_offsets
from tests.chaos.workload import Reader, read_final_log
from tests.support.waiting import wait_until

SOURCE, SINK, GROUP = "txn-in", "txn-out", "txn-transform"
PARTITIONS = 3
WRITERS = 3
STATE_PARTITIONS = 6
TXN_SETTINGS: dict[str, object] = {
    "transaction_state_num_partitions": STATE_PARTITIONS,
    "offsets_topic_num_partitions": STATE_PARTITIONS,
}
"""Fewer internal partitions than the defaults' 50: every kill recovers them all, and a run makes dozens."""
HEAL_TIMEOUT_S = 40.0
STABLE_TIMEOUT_S = 60.0
"""Past the transaction timeout (10 s) after a heal: the bound on an abandoned transaction's abort."""
FIRST_COMMITS_TIMEOUT_S = 60.0
JOIN_TIMEOUT_S = 60.0
QUIET_S = 1.0
WRITER_FAULTS = ("kill_leader", "kill_follower", "pause_leader", "cut_leader", "sigterm_leader", "kill_all")


@dataclass
class TxnRunResult:
    history: History
    reports: list[CheckReport]
    transformed: int
    elapsed_s: float

    @property
    def violations(self) -> list[str]:
        return [v for report in self.reports for v in report.violations]

    def summary(self) -> str:
        lines = [f"transactional chaos run: {len(self.history.faults)} faults in {self.elapsed_s:.1f} s"]
        lines += [f"  fault: {fault}" for fault in self.history.faults]
        lines.append(summary_table(self.reports[:1], TXN_COLUMNS))
        lines.append(summary_table(self.reports[1:], TRANSFORM_COLUMNS))
        lines.append(f"transformed (consume-transform-produce): {self.transformed} records")
        lines.append(f"client errors recovered: {len(self.history.client_errors)}")
        lines += [f"VIOLATION {violation}" for violation in self.violations]
        return "\n".join(lines)


def transactional_faults(first_writer: str) -> tuple[list[Fault], list[Fault]]:
    """(the faults every run makes once, first; the pool the rest are drawn from)."""
    kill_coordinator = kill_transaction_coordinator(first_writer, STATE_PARTITIONS)
    first = [kill_coordinator, delay_markers, FAULTS["kill_leader"]]
    return first, [kill_coordinator, delay_markers, *(FAULTS[name] for name in WRITER_FAULTS)]


def transactional_plan(rng: random.Random, first: list[Fault], pool: list[Fault], duration_s: float) -> FaultPlan:
    """Every fault of ``first`` once, then faults drawn from ``pool`` until ``duration_s`` has passed."""

    async def plan() -> AsyncIterator[Fault]:
        deadline = time.monotonic() + duration_s
        for fault in first:
            yield fault
        while time.monotonic() < deadline:
            yield rng.choice(pool)

    return plan


async def transactional_run(chaos: ChaosCluster, rng: random.Random, duration_s: float) -> TxnRunResult:
    started = time.monotonic()
    for topic in (SOURCE, SINK):
        await asyncio.to_thread(chaos.create_topic, topic, PARTITIONS)
    await asyncio.to_thread(chaos.wait_healed, [SOURCE, SINK], HEAL_TIMEOUT_S)
    history = History()
    bootstrap = chaos.cluster.bootstrap()
    writers = [
        TransactionalWriter(f"txn-w{i}", bootstrap, SOURCE, PARTITIONS, history, rng.randrange(1 << 32))
        for i in range(WRITERS)
    ]
    transform = TransformJob("txn-transform", bootstrap, SOURCE, SINK, PARTITIONS, GROUP, history)
    kafka_reader = KafkaReader("kafka-rc", bootstrap, SOURCE, PARTITIONS, history)
    http_readers = [
        Reader("http-rc", chaos.servers, SOURCE, PARTITIONS, history, READ_COMMITTED),
        Reader("http-ru", chaos.servers, SOURCE, PARTITIONS, history, READ_UNCOMMITTED),
    ]
    stop_writers, stop_readers, stop_http_readers = threading.Event(), threading.Event(), asyncio.Event()
    writer_threads = [_thread(w.run, stop_writers, w.name) for w in writers]
    writer_threads.append(_thread(transform.run, stop_writers, transform.name))
    reader_thread = _thread(kafka_reader.run, stop_readers, kafka_reader.name)
    reader_tasks = [asyncio.create_task(reader.run(stop_http_readers)) for reader in http_readers]
    first, pool = transactional_faults(writers[0].name)
    try:
        await asyncio.to_thread(
            wait_until, lambda: _committed(history) >= WRITERS, "the writers' first commits", FIRST_COMMITS_TIMEOUT_S
        )
        target = FaultTarget(chaos, SOURCE, rng, history)
        async for fault in transactional_plan(rng, first, pool, duration_s)():
            history.faults.append(await fault(target))
            await asyncio.to_thread(chaos.wait_healed, [SOURCE, SINK], HEAL_TIMEOUT_S)
            # Not a wait for a condition: the workload's history on the healed cluster, between faults.
            await asyncio.sleep(QUIET_S)
    finally:
        chaos.heal_all()
        stop_writers.set()
        for thread in writer_threads:
            await asyncio.to_thread(thread.join, JOIN_TIMEOUT_S)
    stuck = [thread.name for thread in writer_threads if thread.is_alive()]
    assert not stuck, f"transactional clients still running {JOIN_TIMEOUT_S} s after the stop: {stuck}"
    states = await asyncio.to_thread(chaos.wait_stable, [SOURCE, SINK], STABLE_TIMEOUT_S)
    stop_readers.set()
    stop_http_readers.set()
    await asyncio.to_thread(reader_thread.join, JOIN_TIMEOUT_S)
    await asyncio.gather(*reader_tasks, return_exceptions=True)
    return TxnRunResult(
        history, await _check(chaos, history, states), transform.transformed, time.monotonic() - started
    )


async def _check(chaos: ChaosCluster, history: History, states: dict) -> list[CheckReport]:
    source_hws = [state.high_watermark for state in states[SOURCE]]
    sink_hws = [state.high_watermark for state in states[SINK]]
    source_uncommitted = await read_final_log(chaos.servers, SOURCE, source_hws, READ_UNCOMMITTED)
    source_committed = await read_final_log(chaos.servers, SOURCE, source_hws, READ_COMMITTED)
    sink_committed = await read_final_log(chaos.servers, SINK, sink_hws, READ_COMMITTED)
    offsets = await asyncio.to_thread(committed_offsets, chaos.cluster.bootstrap(), GROUP, SOURCE, PARTITIONS)
    reports = [
        check_transactions(history, SOURCE, source_uncommitted, source_committed),
        check_transform(source_committed, SINK, sink_committed, offsets),
    ]
    for report, topic, hws in ((reports[0], SOURCE, source_hws), (reports[1], SINK, sink_hws)):
        for partition, hw in enumerate(hws):
            replicas = {b: chaos.replica_bytes_live(topic, partition, b, hw) for b in chaos.brokers}
            check_replicas_agree(report, partition, replicas)
    return reports


def _committed(history: History) -> int:
    return sum(txn.outcome == COMMITTED for txn in history.transactions)


def _thread(run: Callable[[threading.Event], None], stop: threading.Event, name: str) -> threading.Thread:
    thread = threading.Thread(target=run, args=(stop,), name=name, daemon=True)
    thread.start()
    return thread
