"""A leader whose disk fails its fsyncs: the acks=all producer hears the error, the flush is
asked again after a back-off (never at once, which spun the event loop), and the record is
committed once the disk works again."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from broker.acks import Acks
from broker.record.codec import encode_batch
from broker.replica_io.partition import Partition
from broker.storage.flusher import GroupCommitFlusher
from broker.storage.log import PartitionLog
from broker.storage.log_config import FLUSH_FSYNC, LogConfig
from tests.support.waiting import wait_until_async
from tests.unit.replica_io.disk_partition import TOPIC, leadership, no_isr_proposals


class FailingFsyncLog(PartitionLog):
    """A real log whose flush raises, as a disk returning EIO would, while ``failing``."""

    failing = False
    failed_fsyncs = 0

    def flush(self) -> None:
        if self.failing:
            self.failed_fsyncs += 1
            raise OSError(5, "Input/output error")
        super().flush()


async def test_a_failing_fsync_is_asked_again_after_a_back_off_until_the_disk_works(
    tmp_path: Path,
) -> None:
    log = FailingFsyncLog.open(tmp_path / f"{TOPIC}-0", LogConfig(flush_policy=FLUSH_FSYNC), topic=TOPIC, partition=0)
    assert isinstance(log, FailingFsyncLog)
    partition = Partition(
        TOPIC,
        0,
        log,
        GroupCommitFlusher(),
        local_broker_id=1,
        replica_lag_time_max_ms=10_000,
        propose_isr=no_isr_proposals,
        high_watermark=0,
    )
    partition.apply_record(leadership(1, replicas=[1]), min_insync_replicas=1)
    log.failing = True
    with pytest.raises(OSError, match="Input/output error"):
        await partition.append(encode_batch([(None, b"a")]), Acks.ALL, timeout_ms=10_000)
    await asyncio.sleep(0.3)
    assert partition.high_watermark == 0, "nothing is committed before its fsync"
    assert 1 <= log.failed_fsyncs <= 10, f"{log.failed_fsyncs} fsyncs in 0.3 s: 10, 20, 40, 80 ms apart at most"
    log.failing = False
    await wait_until_async(lambda: _committed(partition), "the record committed once an fsync succeeds", 5)
    assert log.recovery_point == 1
    partition.stop()
    log.close()


async def _committed(partition: Partition) -> bool:
    return partition.high_watermark == 1
