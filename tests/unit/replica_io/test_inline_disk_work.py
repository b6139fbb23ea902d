"""Which disk work of a replica runs on the event loop and which in the executor.

Rule (``broker.replica_io.partition`` and ``fetch_handler`` docstrings): a small append
and a caught-up follower's tail read are page-cache copies and run on the loop, which
saves a lone acks=all produce two thread hops per replica, and so does a follower's fsync
of a small answer that was alone in its fetch answer (until an fsync held the loop too
long); every other fsync, a large append, an append that writes the epoch checkpoint,
loading producer state and a read that may touch cold data stay in the executor. The executor here is a real thread pool that
notes what it was given, so the tests see where each piece ran.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from broker.acks import Acks
from broker.record.codec import encode_batch
from broker.record.header import stamp
from broker.replica_io.fetch_handler import serve_replica_fetch
from broker.replica_io.inline_fsync import PAUSE_MS, STALL_MS
from broker.replica_io.partition import (
    INLINE_APPEND_MAX_BYTES,
    INLINE_FLUSH_MAX_BYTES,
    Partition,
)
from broker.replication import PartitionFetchResponse
from broker.replication.fetch_session import LeaderSessions
from broker.replication.fetch_wire import FetchPartition, FetchRequest
from broker.storage.flusher import GroupCommitFlusher
from broker.storage.log import PartitionLog
from broker.storage.log_config import FLUSH_FSYNC, LogConfig
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, TOPIC, leadership, no_isr_proposals, partition_on_disk

BROKER_EPOCH = 5


class NotingExecutor(ThreadPoolExecutor):
    """A thread pool that keeps the name of every function submitted to it."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.names: list[str] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        self.names.append(_name(fn, args))
        return super().submit(fn, *args, **kwargs)


def _name(fn: Callable[..., Any], args: tuple) -> str:
    """``asyncio.to_thread`` submits ``partial(context.run, func)``: name ``func``."""
    if isinstance(fn, functools.partial):
        return _name(fn.args[0], fn.args[1:]) if fn.func.__name__ == "run" else _name(fn.func, fn.args)
    return fn.__name__


@pytest.fixture
async def executor():
    noting = NotingExecutor()
    asyncio.get_running_loop().set_default_executor(noting)
    yield noting


def _partition(tmp_path: Path, *, broker_id: int, leader: int) -> Partition:
    partition = partition_on_disk(tmp_path, broker_id=broker_id)
    partition.apply_record(leadership(leader), min_insync_replicas=2)
    return partition


# ----------------------------------------------------------------------- leader


async def test_a_small_leader_append_is_written_from_the_event_loop(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=1, leader=1)
    outcome = await partition.append(encode_batch([(None, b"a"), (None, b"b")]), Acks.ONE, timeout_ms=1_000)
    assert (outcome.base_offset, outcome.last_offset) == (0, 1)
    assert partition.log_end_offset == 2
    assert "_append_locked" not in executor.names


async def test_a_large_leader_append_is_written_in_the_executor(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=1, leader=1)
    await partition.append(encode_batch([(None, b"x" * INLINE_APPEND_MAX_BYTES)]), Acks.ONE, timeout_ms=1_000)
    assert partition.log_end_offset == 1
    assert executor.names.count("_append_locked") == 1


async def test_an_idempotent_append_loads_producer_state_in_the_executor_once(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=1, leader=1)
    for sequence in (0, 1):
        batch = encode_batch([(None, b"v")], producer_id=42, producer_epoch=0, base_sequence=sequence)
        await partition.append(batch, Acks.ONE, timeout_ms=1_000)
    assert partition.log_end_offset == 2
    assert executor.names.count("_append_locked") == 1, "the first reads the log for producer state, not the second"
    retry = encode_batch([(None, b"v")], producer_id=42, producer_epoch=0, base_sequence=1)
    assert (await partition.append(retry, Acks.ONE, timeout_ms=1_000)).base_offset == 1
    assert partition.log_end_offset == 2, "a retried batch is still answered with its offsets, not written again"


async def test_a_caught_up_consumer_read_is_answered_from_the_loop_when_the_hw_moves(tmp_path: Path, executor) -> None:
    partition = partition_on_disk(tmp_path, broker_id=1)
    partition.apply_record(leadership(1, replicas=(1,)), min_insync_replicas=1)
    await partition.append(encode_batch([(None, b"a")]), Acks.ALL, timeout_ms=1_000)
    executor.names.clear()
    parked = asyncio.create_task(partition.read(1, 1 << 20, timeout_ms=10_000))
    await asyncio.sleep(0)
    assert not parked.done(), "nothing past the consumer's offset yet: the read long-polls"
    await partition.append(encode_batch([(None, b"b")]), Acks.ALL, timeout_ms=1_000)
    async with asyncio.timeout(5):
        result = await parked
    assert result.data == partition.log.read(1, 1 << 20).data
    assert "read" not in executor.names, "the tail read did not hop to a thread"


async def test_a_consumer_read_behind_the_high_watermark_runs_in_the_executor(tmp_path: Path, executor) -> None:
    partition = partition_on_disk(tmp_path, broker_id=1)
    partition.apply_record(leadership(1, replicas=(1,)), min_insync_replicas=1)
    await partition.append(encode_batch([(None, b"a"), (None, b"b")]), Acks.ALL, timeout_ms=1_000)
    executor.names.clear()
    result = await partition.read(0, 1 << 20, timeout_ms=0)
    assert result.data == partition.log.read(0, 1 << 20).data
    assert executor.names == ["read"]


# --------------------------------------------------------------------- follower


def _leader_batch(base_offset: int, value: bytes = b"v") -> bytes:
    batch = bytearray(encode_batch([(None, value)]))
    stamp(batch, 0, base_offset, LEADER_EPOCH)
    return bytes(batch)


async def _fetch_once(partition: Partition, batch: bytes, last_offset: int, *, lone: bool = False) -> None:
    fields = await partition.fetch_request()
    assert fields is not None
    response = PartitionFetchResponse(
        high_watermark=0, log_start_offset=0, log_end_offset=last_offset + 1, records_last_offset=last_offset
    )
    assert not await partition.apply_fetch_response(fields, response, batch, lone=lone)


async def test_a_follower_appends_on_the_loop_and_fsyncs_in_the_executor(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=2, leader=1)
    await _fetch_once(partition, _leader_batch(0), 0)
    assert executor.names == ["append_as_follower", "flush"], "a new epoch writes the epoch checkpoint: executor"
    executor.names.clear()
    await _fetch_once(partition, _leader_batch(1), 1)
    assert executor.names == ["flush"]
    assert partition.log.log_end_offset == partition.log.recovery_point == 2


async def test_a_large_follower_append_runs_in_the_executor(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=2, leader=1)
    await _fetch_once(partition, _leader_batch(0), 0)
    executor.names.clear()
    await _fetch_once(partition, _leader_batch(1, b"x" * INLINE_APPEND_MAX_BYTES), 1)
    assert executor.names == ["append_as_follower", "flush"]
    assert partition.log.recovery_point == 2


async def test_a_lone_small_follower_answer_is_fsynced_on_the_event_loop(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=2, leader=1)
    await _fetch_once(partition, _leader_batch(0), 0)
    executor.names.clear()
    await _fetch_once(partition, _leader_batch(1), 1, lone=True)
    assert executor.names == []
    assert partition.log.recovery_point == 2, "fsynced before the next fetch reports it"


async def test_a_lone_follower_answer_past_the_inline_bound_is_fsynced_in_the_executor(
    tmp_path: Path, executor
) -> None:
    partition = _partition(tmp_path, broker_id=2, leader=1)
    await _fetch_once(partition, _leader_batch(0), 0)
    executor.names.clear()
    await _fetch_once(partition, _leader_batch(1, b"x" * INLINE_FLUSH_MAX_BYTES), 1, lone=True)
    assert executor.names == ["flush"]
    assert partition.log.recovery_point == 2


class StallingFsyncLog(PartitionLog):
    """A disk whose fsync stalls past ``inline_fsync.STALL_MS``."""

    def flush(self) -> None:
        time.sleep(STALL_MS * 1.5 / 1000)
        super().flush()


async def test_a_stalled_inline_fsync_sends_the_replicas_fsyncs_to_the_executor_for_a_while(
    tmp_path: Path, executor
) -> None:
    now_ms = [1_000]
    log = StallingFsyncLog.open(tmp_path / f"{TOPIC}-0", LogConfig(flush_policy=FLUSH_FSYNC), topic=TOPIC, partition=0)
    partition = Partition(
        TOPIC,
        0,
        log,
        GroupCommitFlusher(),
        local_broker_id=2,
        replica_lag_time_max_ms=10_000,
        propose_isr=no_isr_proposals,
        high_watermark=0,
        clock_ms=lambda: now_ms[0],
    )
    partition.apply_record(leadership(1), min_insync_replicas=2)
    await _fetch_once(partition, _leader_batch(0), 0)
    executor.names.clear()
    await _fetch_once(partition, _leader_batch(1), 1, lone=True)
    assert executor.names == [], "the first stalled fsync is met on the loop"
    await _fetch_once(partition, _leader_batch(2), 2, lone=True)
    assert executor.names == ["flush"], "then the executor, for PAUSE_MS"
    now_ms[0] += PAUSE_MS
    await _fetch_once(partition, _leader_batch(3), 3, lone=True)
    assert executor.names == ["flush"], "and the loop again after it"
    assert partition.log.recovery_point == 4


# ------------------------------------------------------------- leader: fetches


def _sessions() -> LeaderSessions:
    return LeaderSessions(new_session_id=lambda: 1)


def _fetch(fetch_offset: int) -> FetchRequest:
    return FetchRequest(
        replica_id=2,
        broker_epoch=BROKER_EPOCH,
        max_wait_ms=10_000,
        max_bytes=1 << 20,
        partitions=[
            FetchPartition(
                topic=TOPIC,
                partition=0,
                fetch_offset=fetch_offset,
                last_fetched_epoch=LEADER_EPOCH,
                current_leader_epoch=LEADER_EPOCH,
                log_start_offset=0,
            )
        ],
    )


async def test_a_parked_tail_fetch_is_answered_from_the_loop_at_the_append(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=1, leader=1)
    await partition.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    executor.names.clear()
    parked = asyncio.create_task(
        serve_replica_fetch(_fetch(1), lambda topic, number: partition, lambda broker_id: BROKER_EPOCH, _sessions())
    )
    await asyncio.sleep(0)
    assert not parked.done(), "nothing past the follower's offset yet: the fetch long-polls"
    await partition.append(encode_batch([(None, b"b")]), Acks.ONE, timeout_ms=1_000)
    async with asyncio.timeout(5):
        [answer] = (await parked).partitions
    assert answer.error is None and answer.records
    assert answer.records == partition.log.read(1, 1 << 20).data
    assert executor.names == [], "neither the append nor the tail read hopped to a thread"


async def test_a_fetch_behind_the_log_end_reads_in_the_executor(tmp_path: Path, executor) -> None:
    partition = _partition(tmp_path, broker_id=1, leader=1)
    await partition.append(encode_batch([(None, b"a"), (None, b"b")]), Acks.ONE, timeout_ms=1_000)
    executor.names.clear()
    fetched = await serve_replica_fetch(
        _fetch(0), lambda topic, number: partition, lambda broker_id: BROKER_EPOCH, _sessions()
    )
    [answer] = fetched.partitions
    assert answer.records == partition.log.read(0, 1 << 20).data
    assert executor.names == ["read"]


# ----------------------------------------------------------------- group commit


async def test_a_group_commit_on_an_idle_log_submits_its_fsync_in_the_call(tmp_path: Path, executor) -> None:
    """The lone acks=all producer's fsync starts before the loop runs the follower fetch it woke."""
    partition = _partition(tmp_path, broker_id=1, leader=1)
    await partition.append(encode_batch([(None, b"a")]), Acks.ONE, timeout_ms=1_000)
    log_flush, first_running = partition.log.flush, threading.Event()

    def flush() -> None:
        """The log's flush, the first held until the three late callers have arrived."""
        assert first_running.wait(5)
        log_flush()

    partition.log.flush = flush  # type: ignore[method-assign]
    flusher = GroupCommitFlusher()
    first = asyncio.create_task(flusher.flush(partition.log))
    await asyncio.sleep(0)
    assert executor.names == ["flush"], "submitted in the first step of the caller, no driver turn in between"
    joined = [asyncio.create_task(flusher.flush(partition.log)) for _ in range(3)]
    await asyncio.sleep(0)
    first_running.set()
    await asyncio.gather(first, *joined)
    assert executor.names == ["flush", "flush"], "the three that arrived while it ran share one more fsync"
    assert partition.log.recovery_point == 1
