"""A follower fsyncs fetched records before its next fetch under the ``fsync`` flush policy.

Rule (docs/replication.md, Durability: ``flush.policy``): with fsync-before-ack,
a power loss on every replica loses nothing acknowledged. The leader raises the HW on
the follower's next fetch offset, so that offset must already be on the follower's
disk. The decision is the core's (``PartitionReplica.on_fetch_response`` asks for a flush);
this checks that the broker's driver performs it on a real log. Found by the seeded
simulation (tests/simulation, ``follower_fsync=False``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.record.codec import encode_batch
from broker.record.header import stamp
from broker.replication import FetchRequestFields, PartitionFetchResponse
from broker.storage.log import PartitionLog
from broker.storage.log_config import FLUSH_FSYNC, FLUSH_OS
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, leadership, partition_on_disk


def _leader_batch(record_count: int) -> bytes:
    """A batch as the leader stored it: offsets from 0, stamped with its epoch."""
    batch = bytearray(encode_batch([(None, f"value-{i}".encode()) for i in range(record_count)]))
    stamp(batch, 0, 0, LEADER_EPOCH)
    return bytes(batch)


async def _no_isr_proposals(proposal):
    raise AssertionError("a follower never proposes ISR changes")


async def _follower_applies_one_fetch(tmp_path: Path, flush_policy: str) -> PartitionLog:
    partition = partition_on_disk(tmp_path, broker_id=2, flush_policy=flush_policy, propose_isr=_no_isr_proposals)
    partition.apply_record(leadership(1), min_insync_replicas=2)
    fields = await partition.fetch_request()
    assert fields == FetchRequestFields(
        replica_id=2, fetch_offset=0, last_fetched_epoch=-1, current_leader_epoch=LEADER_EPOCH, log_start_offset=0
    )
    response = PartitionFetchResponse(high_watermark=0, log_start_offset=0, log_end_offset=3, records_last_offset=2)
    backoff = await partition.apply_fetch_response(fields, response, _leader_batch(3))
    assert not backoff
    return partition.log


@pytest.mark.asyncio
async def test_follower_fsyncs_fetched_records_under_fsync_policy(tmp_path: Path) -> None:
    log = await _follower_applies_one_fetch(tmp_path, FLUSH_FSYNC)
    assert log.log_end_offset == 3
    assert log.recovery_point == 3


@pytest.mark.asyncio
async def test_follower_leaves_flushing_to_the_os_under_os_policy(tmp_path: Path) -> None:
    log = await _follower_applies_one_fetch(tmp_path, FLUSH_OS)
    assert log.log_end_offset == 3
    assert log.recovery_point == 0
