"""Under the ``fsync`` flush policy the high watermark counts only fsynced bytes, on every replica.

Rule (docs/replication.md, Durability: ``flush.policy``): a record readers were shown must survive
a power loss like an acknowledged one. Followers report a fetch offset they fsynced;
the leader's own log counts up to its flushed offset, and when only that holds the HW
back the core asks for a group commit (``Ready.start_flush``) that the driver reports
with ``PartitionReplica.on_flushed``. Found by the seeded simulation (seed 404: a leader
exposed its unflushed acks=1 tail, was left alone in the ISR and lost power). The
decisions are the core's; this checks that the broker's driver performs them on a real log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.acks import Acks
from broker.record.codec import encode_batch
from broker.replica_io.partition import Partition
from broker.replication import FetchRequestFields
from broker.storage.log_config import FLUSH_FSYNC, FLUSH_OS
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, leadership, partition_on_disk


def _follower_fetches(partition: Partition, follower: int, fetch_offset: int) -> None:
    fields = FetchRequestFields(
        replica_id=follower,
        fetch_offset=fetch_offset,
        last_fetched_epoch=LEADER_EPOCH,
        current_leader_epoch=LEADER_EPOCH,
        log_start_offset=0,
    )
    outcome = partition.record_follower_fetch(fields, broker_epoch=5, registered_broker_epoch=5)
    assert outcome.error is None and outcome.diverging_epoch is None


async def _leader_with_acks_one_tail_held_by_followers(tmp_path: Path, flush_policy: str) -> Partition:
    partition = partition_on_disk(tmp_path, broker_id=1, flush_policy=flush_policy)
    partition.apply_record(leadership(1), min_insync_replicas=2)
    await partition.append(encode_batch([(None, b"a"), (None, b"b"), (None, b"c")]), Acks.ONE, timeout_ms=1_000)
    assert partition.log.recovery_point == 0, "acks=1 is answered without an fsync"
    _follower_fetches(partition, 2, 3)
    _follower_fetches(partition, 3, 3)
    return partition


@pytest.mark.asyncio
async def test_the_leader_fsyncs_its_tail_before_the_hw_passes_it_under_fsync_policy(tmp_path: Path) -> None:
    partition = await _leader_with_acks_one_tail_held_by_followers(tmp_path, FLUSH_FSYNC)
    assert partition.high_watermark == 0, "every follower holds offsets 0-2, the leader's disk none"
    for _ in range(100):
        if partition.high_watermark == 3:
            break
        await asyncio.sleep(0.01)
    assert partition.high_watermark == 3
    assert partition.log.recovery_point == 3


@pytest.mark.asyncio
async def test_the_leader_hw_counts_its_log_end_under_os_policy(tmp_path: Path) -> None:
    partition = await _leader_with_acks_one_tail_held_by_followers(tmp_path, FLUSH_OS)
    assert partition.high_watermark == 3
    assert partition.log.recovery_point == 0


@pytest.mark.asyncio
async def test_a_deposed_leader_fsyncs_its_unflushed_tail_before_fetching_as_a_follower(tmp_path: Path) -> None:
    """Its fetch offset (its LEO) tells the new leader everything below it is held here."""
    partition = partition_on_disk(tmp_path, broker_id=1, flush_policy=FLUSH_FSYNC)
    partition.apply_record(leadership(1), min_insync_replicas=2)
    await partition.append(encode_batch([(None, b"a"), (None, b"b")]), Acks.ONE, timeout_ms=1_000)
    partition.apply_record(leadership(2, leader_epoch=LEADER_EPOCH + 1), min_insync_replicas=2)
    assert partition.log.recovery_point == 0
    fields = await partition.fetch_request()
    assert fields is not None and fields.fetch_offset == 2
    assert partition.log.recovery_point == 2
