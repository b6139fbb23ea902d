"""What aborted transactions cost a partition log: memory, the ``read_committed`` search, and an open.

Run ``python -m broker.bench.txn_index`` (``--aborts``, ``--records-per-txn``,
``--segment-mb``, ``--dir``). It appends ``--aborts`` transactions of one batch of
100 B records, each ended by an ABORT marker, with a plain 16 KiB batch after every
tenth, to a log of ``--segment-mb`` segments (no fsync but the rolls'), then prints:

- ``fill``: seconds for all the appends and the slowest one (a roll: it writes the
  rolled segment's ``.txnindex`` and the transactions snapshot under the log's lock);
- ``memory``: the Python heap the log holds for its aborted transactions (its active
  segment's index) next to what one list of them all takes (``tracemalloc``), and the
  bytes of the ``.txnindex`` files;
- ``search``: microseconds per ``aborted_between`` over the offsets a 1 MiB read covers, starting
  in a rolled segment (the file is read) and in the active one (memory);
- ``open``: seconds to open the log after a clean close, after a crash (the replay
  from the last roll), and with no snapshot (the whole log replayed and every
  ``.txnindex`` checked against it).
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import structlog

from broker.clock import wall_clock_ms
from broker.record.codec import RecordInput, encode_batch
from broker.record.control import TransactionMarker, encode_marker_batch
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from broker.storage.transaction_snapshot import SNAPSHOT_FILE
from broker.storage.transactions import AbortedTransaction

PRODUCER_ID = 7000
PLAIN_EVERY = 10
PLAIN_BATCH_BYTES = 16 * 1024
SEARCHES = 2000


@dataclass(frozen=True, slots=True)
class TxnIndexFigures:
    aborts: int
    aborts_in_active: int
    segments: int
    fill_s: float
    slowest_append_ms: float
    held_bytes: int
    """Heap the log holds for aborted transactions after the run."""
    all_in_memory_bytes: int
    """Heap one list of every aborted transaction takes."""
    file_bytes: int
    search_rolled_us: float
    search_active_us: float
    open_clean_s: float
    open_crashed_s: float
    open_full_replay_s: float

    def lines(self) -> list[str]:
        return [
            f"aborted transactions {self.aborts:,} in {self.segments} segments",
            f"fill: {self.fill_s:.2f} s, slowest append {self.slowest_append_ms:.1f} ms",
            f"memory: held {self.held_bytes / 1e6:,.2f} MB (all in memory: {self.all_in_memory_bytes / 1e6:,.2f} MB), "
            f".txnindex files {self.file_bytes / 1e6:,.2f} MB",
            f"search per 1 MiB read: rolled segment {self.search_rolled_us:,.1f} us, active {self.search_active_us:,.1f} us",
            f"open: clean {self.open_clean_s:.3f} s, after a crash {self.open_crashed_s:.3f} s, "
            f"whole replay {self.open_full_replay_s:.3f} s",
        ]


def _open(directory: Path, segment_bytes: int, recovery_point: int = 0) -> PartitionLog:
    """The log in ``directory``, recovered from ``recovery_point`` as a broker's checkpoint would say."""
    return PartitionLog.open(
        directory, LogConfig(segment_bytes=segment_bytes), topic="bench", partition=0, recovery_point=recovery_point
    )


def _fill(log: PartitionLog, aborts: int, records_per_txn: int) -> float:
    """Append the transactions; return the slowest append's seconds."""
    record = encode_batch(
        [RecordInput(None, b"v" * 100, (), None)] * records_per_txn,
        producer_id=PRODUCER_ID,
        producer_epoch=0,
        is_transactional=True,
    )
    marker = encode_marker_batch(TransactionMarker(PRODUCER_ID, 0, False, 1), wall_clock_ms())
    plain = encode_batch([RecordInput(None, b"p" * PLAIN_BATCH_BYTES, (), None)])
    now_ms = wall_clock_ms()
    slowest = 0.0
    for number in range(aborts):
        for batch in (record, marker, plain) if number % PLAIN_EVERY == 0 else (record, marker):
            began = time.perf_counter()
            log.append_as_leader(batch, 0, now_ms)
            slowest = max(slowest, time.perf_counter() - began)
        log.transactions.on_high_watermark(log.log_end_offset)  # as the replica tells it: every follower has it
    return slowest


def _heap_of_list(aborts: list[AbortedTransaction]) -> int:
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    copied = [AbortedTransaction(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset) for t in aborts]
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del copied
    return size


def _search_us(log: PartitionLog, starts: list[int], span: int) -> float:
    began = time.perf_counter()
    for start in starts:
        log.aborted_between(start, min(start + span, log.log_end_offset))
    return (time.perf_counter() - began) / len(starts) * 1e6


def _timed_open(directory: Path, segment_bytes: int, recovery_point: int) -> tuple[PartitionLog, float]:
    began = time.perf_counter()
    log = _open(directory, segment_bytes, recovery_point)
    return log, time.perf_counter() - began


def bench_txn_index(
    directory: Path, aborts: int, segment_bytes: int, records_per_txn: int = 1, seed: int = 1
) -> TxnIndexFigures:
    """Fill a log in ``directory`` (which must not exist) and measure it; the log is closed after."""
    log = _open(directory, segment_bytes)
    began = time.perf_counter()
    slowest_append_s = _fill(log, aborts, records_per_txn)
    fill_s = time.perf_counter() - began
    everything = log.aborted_between(log.log_start_offset, log.log_end_offset)
    held = log.segments[-1].txn_index.active_entries
    rng = random.Random(seed)
    active_base = log.segments[-1].base_offset
    span = max(1, log.log_end_offset * (1 << 20) // log.size_bytes)
    rolled_starts = [rng.randrange(log.log_start_offset, max(active_base - span, 1)) for _ in range(SEARCHES)]
    active_starts = [rng.randrange(active_base, log.log_end_offset) for _ in range(SEARCHES)]
    held_bytes, all_in_memory_bytes = _heap_of_list(held), _heap_of_list(everything)
    file_bytes = sum(path.stat().st_size for path in directory.glob("*.txnindex"))
    search_rolled_us = _search_us(log, rolled_starts, span)
    search_active_us = _search_us(log, active_starts, span)
    segments = len(log.segments)
    log.flush()
    _crashed, open_crashed_s = _timed_open(directory, segment_bytes, log.recovery_point)  # the first never closed
    log.close()
    clean, open_clean_s = _timed_open(directory, segment_bytes, log.recovery_point)
    clean.close()
    (directory / SNAPSHOT_FILE).unlink()
    replayed, open_full_replay_s = _timed_open(directory, segment_bytes, clean.recovery_point)
    if replayed.aborted_between(replayed.log_start_offset, replayed.log_end_offset) != everything:
        raise RuntimeError("the whole replay found other aborted transactions than the indexes held")
    replayed.close()
    return TxnIndexFigures(
        aborts=len(everything),
        aborts_in_active=len(held),
        segments=segments,
        fill_s=fill_s,
        slowest_append_ms=slowest_append_s * 1000,
        held_bytes=held_bytes,
        all_in_memory_bytes=all_in_memory_bytes,
        file_bytes=file_bytes,
        search_rolled_us=search_rolled_us,
        search_active_us=search_active_us,
        open_clean_s=open_clean_s,
        open_crashed_s=open_crashed_s,
        open_full_replay_s=open_full_replay_s,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aborts", type=int, default=200_000)
    parser.add_argument("--records-per-txn", type=int, default=10)
    parser.add_argument("--segment-mb", type=float, default=16)
    parser.add_argument("--dir", type=Path, default=None, help="where to write the log (default: a temporary one)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parent = Path(tempfile.mkdtemp(prefix="bench-txn-index-", dir=args.dir))
    try:
        figures = bench_txn_index(
            parent / "bench-0", args.aborts, int(args.segment_mb * 1_000_000), args.records_per_txn
        )
    finally:
        shutil.rmtree(parent)
    print("\n".join(figures.lines()))


if __name__ == "__main__":
    main()
