"""Append and read throughput of ``PartitionLog`` alone (no HTTP, no replication).

Run ``python -m broker.bench.storage`` (``--seconds`` per measurement, default 3;
``--leader-only`` for the two leader loops alone). Every append is one real, CRC-valid
record batch v2 built by ``encode_batch``:

- ``leader``: the acks=all path of a leader, several concurrent appenders each
  appending one batch in an executor thread and awaiting ``GroupCommitFlusher.flush``,
  for batches of 1000 records of 100 B and for single 100 B records. Besides appends/s
  it counts the ``os.fsync`` and ``os.write`` calls the process made (all files: log,
  indexes, directory), per second and per append: what the disk is asked to do;
- ``fsync``: the same loop with 16 KiB batches (``flushes/s`` are group commits);
- ``os``: one appender, no fsync (the page cache decides; Kafka's default);
- ``read``: whole-log reads of up to 1 MiB per call from offset 0, as a fetch does.

Figures depend on the disk: run it on the one the broker will use (``--dir``).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from broker.clock import wall_clock_ms
from broker.record.codec import RecordInput, encode_batch
from broker.storage.flusher import GroupCommitFlusher
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig

BATCH_BYTES = 16 * 1024
RECORD_VALUE_BYTES = 1000
LEADER_VALUE_BYTES = 100
LEADER_BATCH_RECORDS = 1000
READ_MAX_BYTES = 1 << 20
_MB = 1_000_000


@dataclass(frozen=True, slots=True)
class Figure:
    scenario: str
    seconds: float
    batches: int
    bytes_total: int
    fsyncs: int | None = None

    def row(self) -> str:
        mb_per_s = self.bytes_total / _MB / self.seconds
        batches_per_s = self.batches / self.seconds
        fsyncs = "-" if self.fsyncs is None else f"{self.fsyncs / self.seconds:,.0f}"
        return f"{self.scenario:<28} {mb_per_s:>10,.1f} {batches_per_s:>12,.0f} {fsyncs:>10}"


def build_batch(target_bytes: int = BATCH_BYTES) -> bytes:
    """A valid batch of about ``target_bytes``: records of 1000-byte values, topped up to size."""
    records = [RecordInput(b"key-%05d" % i, bytes([i % 251]) * RECORD_VALUE_BYTES, (), None) for i in range(15)]
    batch = encode_batch(records)
    padding = max(target_bytes - len(batch) - 20, 1)
    return encode_batch([*records, RecordInput(b"pad", b"p" * padding, (), None)])


def build_leader_batch(record_count: int) -> bytes:
    """``record_count`` records of 100-byte values, as a producer's batch of small records."""
    return encode_batch(
        [RecordInput(b"key-%05d" % i, bytes([i % 251]) * LEADER_VALUE_BYTES, (), None) for i in range(record_count)]
    )


@dataclass(slots=True)
class SyscallCount:
    writes: int = 0
    fsyncs: int = 0


@contextmanager
def counting_syscalls() -> Iterator[SyscallCount]:
    """Count this process's ``os.write`` and ``os.fsync`` calls meanwhile (the storage code calls them via ``os``).

    A benchmark-only probe, so the figures of any version of the storage code compare.
    """
    writes, fsyncs = itertools.count(), itertools.count()
    real_write, real_fsync = os.write, os.fsync

    def counted(real: Callable[..., Any], counter: Iterator[int]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            next(counter)
            return real(*args)

        return call

    result = SyscallCount()
    os.write, os.fsync = counted(real_write, writes), counted(real_fsync, fsyncs)
    try:
        yield result
    finally:
        os.write, os.fsync = real_write, real_fsync
        result.writes, result.fsyncs = next(writes), next(fsyncs)


@dataclass(frozen=True, slots=True)
class LeaderFigure:
    scenario: str
    seconds: float
    appends: int
    records: int
    flushes: int
    syscalls: SyscallCount

    def row(self) -> str:
        per_s = 1 / self.seconds
        per_append = 1 / max(self.appends, 1)
        return (
            f"{self.scenario:<28} {self.appends * per_s:>10,.0f} {self.records * per_s:>12,.0f} "
            f"{self.flushes * per_s:>10,.0f} {self.syscalls.fsyncs * per_s:>10,.0f} "
            f"{self.syscalls.fsyncs * per_append:>12.2f} {self.syscalls.writes * per_append:>12.2f}"
        )


LEADER_HEADER = (
    f"{'scenario':<28} {'appends/s':>10} {'records/s':>12} {'flushes/s':>10} {'fsyncs/s':>10} "
    f"{'fsyncs/append':>12} {'writes/append':>12}"
)


def _open(directory: Path, flush_policy: str) -> PartitionLog:
    return PartitionLog.open(directory, LogConfig(flush_policy=flush_policy), topic="bench", partition=0)


async def _append_and_commit(log: PartitionLog, batch: bytes, seconds: float, appenders: int) -> tuple[float, int]:
    """The leader's acks=all loop: append in an executor thread, await the group commit; (seconds, appends)."""
    flusher = GroupCommitFlusher()
    loop = asyncio.get_running_loop()
    appended = 0
    started = time.perf_counter()
    deadline = started + seconds

    async def appender() -> None:
        nonlocal appended
        while time.perf_counter() < deadline:
            await loop.run_in_executor(None, log.append_as_leader, batch, 0, wall_clock_ms())
            await flusher.flush(log)
            appended += 1

    await asyncio.gather(*(appender() for _ in range(appenders)))
    return time.perf_counter() - started, appended


async def bench_group_commit(directory: Path, batch: bytes, seconds: float, appenders: int) -> Figure:
    log = _open(directory, "fsync")
    fsyncs_before = log.fsync_count
    elapsed, appended = await _append_and_commit(log, batch, seconds, appenders)
    figure = Figure(
        f"append fsync ({appenders} appenders)",
        elapsed,
        appended,
        appended * len(batch),
        log.fsync_count - fsyncs_before,
    )
    log.close()
    return figure


async def bench_leader(directory: Path, record_count: int, seconds: float, appenders: int) -> LeaderFigure:
    """Appends of ``record_count``-record batches through group commit, counting the syscalls they cost."""
    batch = build_leader_batch(record_count)
    log = _open(directory, "fsync")
    flushes_before = log.fsync_count
    with counting_syscalls() as syscalls:
        elapsed, appended = await _append_and_commit(log, batch, seconds, appenders)
    figure = LeaderFigure(
        f"leader {record_count} x {LEADER_VALUE_BYTES} B ({appenders} app.)",
        elapsed,
        appended,
        appended * record_count,
        log.fsync_count - flushes_before,
        syscalls,
    )
    log.close()
    return figure


def bench_os(directory: Path, batch: bytes, seconds: float) -> Figure:
    log = _open(directory, "os")
    appended = 0
    started = time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        for _ in range(64):
            log.append_as_leader(batch, 0, wall_clock_ms())
        appended += 64
    elapsed = time.perf_counter() - started
    log.close()
    return Figure("append os (1 appender)", elapsed, appended, appended * len(batch))


def bench_read(directory: Path, seconds: float, batch_bytes: int) -> Figure:
    """Fetch-sized reads over the whole log, wrapping to the start; every batch is ``batch_bytes``."""
    log = _open(directory, "os")
    batches = bytes_read = 0
    started = time.perf_counter()
    deadline = started + seconds
    offset = log.log_start_offset
    while time.perf_counter() < deadline:
        result = log.read(offset, READ_MAX_BYTES)
        if not result.data:
            offset = log.log_start_offset
            continue
        bytes_read += len(result.data)
        batches += len(result.data) // batch_bytes
        offset = result.next_offset
    elapsed = time.perf_counter() - started
    log.close()
    return Figure("read 1 MiB fetches", elapsed, batches, bytes_read)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each measurement")
    parser.add_argument("--appenders", type=int, default=8, help="concurrent appenders in the fsync runs")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temporary directory)")
    parser.add_argument("--leader-only", action="store_true", help="run the two leader loops alone")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    batch = build_batch()
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        root = Path(scratch)
        leader = [
            asyncio.run(bench_leader(root / f"leader-{count}-0", count, args.seconds, args.appenders))
            for count in (LEADER_BATCH_RECORDS, 1)
        ]
        figures = []
        if not args.leader_only:
            figures = [
                asyncio.run(bench_group_commit(root / "fsync-0", batch, args.seconds, args.appenders)),
                bench_os(root / "os-0", batch, args.seconds),
                bench_read(root / "os-0", args.seconds, len(batch)),
            ]
    print(LEADER_HEADER)
    for leader_figure in leader:
        print(leader_figure.row())
    if figures:
        print(f"\nbatch size: {len(batch)} bytes")
        print(f"{'scenario':<28} {'MB/s':>10} {'batches/s':>12} {'flushes/s':>10}")
        for figure in figures:
            print(figure.row())


if __name__ == "__main__":
    main()
