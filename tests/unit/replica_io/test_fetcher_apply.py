"""A follower applies the partitions of one fetch answer concurrently, so their fsyncs overlap.

Rule (``broker.replica_io.fetcher.apply_responses``): each partition's fetched records
are fsynced before the next fetch reports them; with several partitions in one answer
those fsyncs run in parallel worker threads, not one after the other. The executor
here makes every fsync wait until two are in flight at once: applied one partition at
a time, the first fsync would give up waiting and the apply would fail.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from broker.record.codec import encode_batch
from broker.record.header import stamp
from broker.replica_io.fetcher import apply_responses
from broker.replica_io.partition import Partition
from broker.replication.fetch_wire import FetchPartitionResponse
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, TOPIC, leadership, partition_on_disk


class PairedFsyncExecutor(ThreadPoolExecutor):
    """Every ``flush`` waits (at most 5 s) until another one is running too."""

    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.pair = threading.Barrier(2, timeout=5)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if getattr(fn, "__name__", "") == "flush":
            flush = fn

            def fn(*args: Any, **kwargs: Any) -> Any:
                self.pair.wait()
                return flush(*args, **kwargs)

        return super().submit(fn, *args, **kwargs)


async def _no_isr_proposals(proposal):
    raise AssertionError("a follower never proposes ISR changes")


def _follower(tmp_path: Path, number: int) -> Partition:
    partition = partition_on_disk(tmp_path, broker_id=2, number=number, propose_isr=_no_isr_proposals)
    partition.apply_record(leadership(1, number=number), min_insync_replicas=2)
    return partition


def _answer(number: int) -> FetchPartitionResponse:
    batch = bytearray(encode_batch([(None, b"a"), (None, b"b")]))
    stamp(batch, 0, 0, LEADER_EPOCH)
    return FetchPartitionResponse(
        topic=TOPIC, partition=number, high_watermark=0, log_start_offset=0, log_end_offset=2, records=bytes(batch)
    )


async def test_the_partitions_of_one_answer_fsync_concurrently(tmp_path: Path) -> None:
    asyncio.get_running_loop().set_default_executor(PairedFsyncExecutor())
    followers = [_follower(tmp_path, number) for number in (0, 1)]
    fetchable = []
    for follower in followers:
        fields = await follower.fetch_request()
        assert fields is not None
        fetchable.append((follower, fields))
    backoff = await apply_responses(1, list(zip(fetchable, [_answer(0), _answer(1)], strict=True)))
    assert not backoff
    for follower in followers:
        assert follower.log.log_end_offset == follower.log.recovery_point == 2


async def test_a_partition_whose_answer_fails_asks_for_a_backoff_without_stopping_the_other(tmp_path: Path) -> None:
    followers = [_follower(tmp_path, number) for number in (0, 1)]
    fetchable = []
    for follower in followers:
        fields = await follower.fetch_request()
        assert fields is not None
        fetchable.append((follower, fields))
    corrupt = FetchPartitionResponse(
        topic=TOPIC, partition=0, high_watermark=0, log_start_offset=0, log_end_offset=2, records=b"\x00" * 70
    )
    assert await apply_responses(1, list(zip(fetchable, [corrupt, _answer(1)], strict=True)))
    assert followers[0].log.log_end_offset == 0
    assert followers[1].log.log_end_offset == followers[1].log.recovery_point == 2
