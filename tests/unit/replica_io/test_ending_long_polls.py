"""A stopping broker ends its long polls: a parked read answers at once with what it has.

Found by the harness: a cluster with a consumer parked on a 10 s long poll took 10 s
to stop, because the HTTP server waits for every request in flight before the broker
stops. ``Partition.end_long_polls`` (called from the server's shutdown) wakes every
waiter, and a read that starts afterwards does not wait at all.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.replica_io.partition import Partition
from broker.replica_io.signal import Signal
from tests.unit.replica_io.disk_partition import leadership, partition_on_disk

LONG_POLL_MS = 600_000
"""Far longer than any test runs: a read that waited it out would hang the suite."""


def _leader(tmp_path: Path) -> Partition:
    partition = partition_on_disk(tmp_path, broker_id=1)
    partition.apply_record(leadership(1, replicas=[1]), min_insync_replicas=1)
    return partition


def test_an_ended_signal_wakes_its_waiters_and_says_so() -> None:
    signal = Signal()
    waiter = signal.waiter()
    assert not signal.ended
    signal.end()
    assert waiter.is_set() and signal.ended


async def test_a_parked_read_answers_empty_once_long_polls_end(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    read = asyncio.create_task(partition.read(0, 1024, LONG_POLL_MS))
    await asyncio.sleep(0)  # one turn: the read registers its waiter, then reads the log in the executor
    assert not read.done(), "nothing is below the HW: the read waits"
    partition.end_long_polls()
    result = await read
    assert result.data == b""


async def test_a_read_after_the_end_does_not_wait(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    partition.end_long_polls()
    result = await partition.read(0, 1024, LONG_POLL_MS)
    assert result.data == b""
