"""Append and read throughput of ``PartitionLog`` alone (no HTTP, no replication).

Run ``python -m broker.bench.storage`` (``--seconds`` per measurement, default 3). Every
append is one real, CRC-valid 16 KiB record batch v2 built by ``encode_batch``:

- ``fsync``: several concurrent appenders, each awaiting ``GroupCommitFlusher.flush``
  after its append, as acks=all producers do; one fsync covers every append that
  arrived while the previous one ran, so the table shows fsyncs/s next to batches/s;
- ``os``: one appender, no fsync (the page cache decides; Kafka's default);
- ``read``: whole-log reads of up to 1 MiB per call from offset 0, as a fetch does.

Figures depend on the disk: run it on the one the broker will use (``--dir``).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from broker.record.codec import RecordInput, encode_batch
from broker.storage.flusher import GroupCommitFlusher
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig

BATCH_BYTES = 16 * 1024
RECORD_VALUE_BYTES = 1000
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


def _open(directory: Path, flush_policy: str) -> PartitionLog:
    return PartitionLog.open(directory, LogConfig(flush_policy=flush_policy), topic="bench", partition=0)


async def bench_group_commit(directory: Path, batch: bytes, seconds: float, appenders: int) -> Figure:
    log = _open(directory, "fsync")
    flusher = GroupCommitFlusher()
    loop = asyncio.get_running_loop()
    appended = 0
    fsyncs_before = log.fsync_count
    started = time.perf_counter()
    deadline = started + seconds

    async def appender() -> None:
        nonlocal appended
        while time.perf_counter() < deadline:
            await loop.run_in_executor(None, log.append_as_leader, batch, 0, int(time.time() * 1000))
            await flusher.flush(log)
            appended += 1

    await asyncio.gather(*(appender() for _ in range(appenders)))
    elapsed = time.perf_counter() - started
    figure = Figure(
        f"append fsync ({appenders} appenders)",
        elapsed,
        appended,
        appended * len(batch),
        log.fsync_count - fsyncs_before,
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
            log.append_as_leader(batch, 0, int(time.time() * 1000))
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
    parser.add_argument("--appenders", type=int, default=8, help="concurrent appenders in the fsync run")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    batch = build_batch()
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        root = Path(scratch)
        figures = [
            asyncio.run(bench_group_commit(root / "fsync-0", batch, args.seconds, args.appenders)),
            bench_os(root / "os-0", batch, args.seconds),
            bench_read(root / "os-0", args.seconds, len(batch)),
        ]
    print(f"batch size: {len(batch)} bytes")
    print(f"{'scenario':<28} {'MB/s':>10} {'batches/s':>12} {'fsyncs/s':>10}")
    for figure in figures:
        print(figure.row())


if __name__ == "__main__":
    main()
