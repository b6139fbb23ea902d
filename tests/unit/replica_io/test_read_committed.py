"""A leader's reads by isolation, and what it refuses to append, over a real log.

``read_committed`` readers stop at the last stable offset: below the oldest open
transaction, and below any transaction whose marker the high watermark has not passed.
Producers never write control batches, and (KIP-890) never transactional records into
a partition their coordinator has not verified as part of their open transaction;
nothing of such a produce is written. Transactional batches reach the log here the way they reach a follower: as
batches appended to the log itself.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.acks import Acks
from broker.errors.transactions import InvalidRecord, InvalidTxnState
from broker.isolation import Isolation
from broker.record.header import iter_batches
from broker.replica_io.partition import Partition
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, leadership, partition_on_disk
from tests.unit.storage.transaction_batches import NOW_MS, data_batch, marker_batch

P1 = 1001
LONG_POLL_MS = 600_000
ANSWERED_WITHIN_S = 5


def _leader(tmp_path: Path) -> Partition:
    partition = partition_on_disk(tmp_path, broker_id=1, clock_ms=lambda: NOW_MS)
    partition.apply_record(leadership(1, replicas=[1]), min_insync_replicas=1)
    return partition


async def _plain(partition: Partition) -> None:
    """A plain acks=all write: the HW of a one-replica partition reaches the log end."""
    await partition.append(data_batch(-1), Acks.ALL, timeout_ms=5_000)


def _bases(data: bytes) -> list[int]:
    return [header.base_offset for header in iter_batches(data)]


async def test_read_committed_stops_at_the_oldest_open_transaction(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    await _plain(partition)  # 0
    partition.log.append_as_leader(data_batch(P1, 2), LEADER_EPOCH, NOW_MS)  # 1-2
    await _plain(partition)  # 3
    assert (partition.high_watermark, partition.last_stable_offset) == (4, 1)
    committed = await partition.read(0, 1 << 20, 0, Isolation.READ_COMMITTED)
    uncommitted = await partition.read(0, 1 << 20, 0)
    assert _bases(committed.data) == [0]
    assert _bases(uncommitted.data) == [0, 1, 3]


async def test_a_parked_read_committed_wakes_when_the_marker_is_below_the_hw(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    partition.log.append_as_leader(data_batch(P1), LEADER_EPOCH, NOW_MS)  # 0
    await _plain(partition)  # 1
    read = asyncio.create_task(partition.read(0, 1 << 20, LONG_POLL_MS, Isolation.READ_COMMITTED))
    await asyncio.sleep(0.05)
    assert not read.done(), "the transaction is open: nothing is stable"
    partition.log.append_as_leader(marker_batch(P1, committed=True), LEADER_EPOCH, NOW_MS)  # 2
    assert partition.last_stable_offset == 0, "the marker is above the HW: still undecided for readers"
    await _plain(partition)  # 3
    async with asyncio.timeout(ANSWERED_WITHIN_S):
        result = await read
    assert _bases(result.data) == [0, 1, 2, 3]
    assert partition.last_stable_offset == partition.high_watermark == 4


async def test_a_transactional_produce_is_refused_whole_unless_its_coordinator_verifies_it(tmp_path: Path) -> None:
    """Without its transactional id, or without a coordinator to ask, nothing is written (KIP-890)."""
    partition = _leader(tmp_path)
    with pytest.raises(InvalidTxnState, match=f"producer {P1} .* came without its transactional id"):
        await partition.append(data_batch(P1), Acks.ALL, timeout_ms=5_000)
    with pytest.raises(InvalidTxnState, match=f"no transaction coordinator to verify producer {P1}"):
        await partition.append(data_batch(P1), Acks.ALL, timeout_ms=5_000, transactional_id="writer")
    assert partition.log_end_offset == 0


async def test_a_produced_control_batch_is_refused(tmp_path: Path) -> None:
    partition = _leader(tmp_path)
    with pytest.raises(InvalidRecord, match="control batch"):
        await partition.append(marker_batch(P1, committed=False), Acks.ONE, timeout_ms=5_000)
    assert partition.log_end_offset == 0
