"""A stopping broker ends its long polls: a parked read answers at once with what it has.

Found by the harness: a cluster with a consumer parked on a 10 s long poll took 10 s
to stop, because the HTTP server waits for every request in flight before the broker
stops. ``Partition.end_long_polls`` (called from the server's shutdown) wakes every
waiter, consumer reads and follower fetches alike, and a read that starts afterwards
does not wait at all.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker.acks import Acks
from broker.record.codec import encode_batch
from broker.replica_io.fetch_handler import serve_replica_fetch
from broker.replica_io.partition import Partition
from broker.replica_io.signal import Signal
from broker.replication.fetch_session import LeaderSessions
from broker.replication.fetch_wire import FetchPartition, FetchRequest
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, TOPIC, leadership, partition_on_disk

LONG_POLL_MS = 600_000
"""Far longer than any test runs: only an ended poll answers within ``ANSWERED_WITHIN_S``."""
ANSWERED_WITHIN_S = 5
BROKER_EPOCH = 5


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
    async with asyncio.timeout(ANSWERED_WITHIN_S):
        result = await read
    assert result.data == b""


async def test_a_parked_follower_fetch_answers_without_records_once_long_polls_end(tmp_path: Path) -> None:
    partition = partition_on_disk(tmp_path, broker_id=1)
    partition.apply_record(leadership(1), min_insync_replicas=2)
    await partition.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    at_the_tail = FetchRequest(
        replica_id=2,
        broker_epoch=BROKER_EPOCH,
        max_wait_ms=LONG_POLL_MS,
        max_bytes=1 << 20,
        partitions=[
            FetchPartition(
                topic=TOPIC,
                partition=0,
                fetch_offset=1,
                last_fetched_epoch=LEADER_EPOCH,
                current_leader_epoch=LEADER_EPOCH,
                log_start_offset=0,
            )
        ],
    )
    sessions = LeaderSessions(new_session_id=lambda: 1)
    fetch = asyncio.create_task(
        serve_replica_fetch(at_the_tail, lambda topic, number: partition, lambda broker_id: BROKER_EPOCH, sessions)
    )
    await asyncio.sleep(0)
    assert not fetch.done(), "nothing past the follower's offset: the fetch long-polls"
    partition.end_long_polls()
    async with asyncio.timeout(ANSWERED_WITHIN_S):
        answer = await fetch
    assert all(not partition_answer.records for partition_answer in answer.partitions)


async def test_a_read_after_the_end_does_not_wait(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    partition.end_long_polls()
    result = await partition.read(0, 1024, LONG_POLL_MS)
    assert result.data == b""
