"""A broker's ``Partition`` driver over a real log in a test's directory, as the replica manager builds one.

The replica_io tests check what the driver does on a real log (fsync, inline appends,
fetch application, long polls); they differ in the role and the flush policy, not in
how a partition is put together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from broker.clock import wall_clock_ms
from broker.cluster.records import PartitionRecord
from broker.replica_io.partition import IsrProposer, Partition
from broker.replication import ProposeIsr
from broker.storage.flusher import GroupCommitFlusher
from broker.storage.log import PartitionLog
from broker.storage.log_config import FLUSH_FSYNC, LogConfig

TOPIC = "orders"
LEADER_EPOCH = 3


async def no_isr_proposals(proposal: ProposeIsr) -> None:
    """An ISR proposal is dropped: the controller never answers it."""
    return None


def partition_on_disk(
    tmp_path: Path,
    *,
    broker_id: int,
    number: int = 0,
    flush_policy: str = FLUSH_FSYNC,
    propose_isr: IsrProposer = no_isr_proposals,
    clock_ms: Callable[[], int] = wall_clock_ms,
) -> Partition:
    """Partition ``number`` of ``TOPIC`` on broker ``broker_id``, its log under ``tmp_path``; no role yet."""
    log = PartitionLog.open(
        tmp_path / f"{TOPIC}-{number}", LogConfig(flush_policy=flush_policy), topic=TOPIC, partition=number
    )
    return Partition(
        TOPIC,
        number,
        log,
        GroupCommitFlusher(),
        local_broker_id=broker_id,
        replica_lag_time_max_ms=10_000,
        propose_isr=propose_isr,
        high_watermark=0,
        clock_ms=clock_ms,
    )


def leadership(
    leader: int, *, number: int = 0, leader_epoch: int = LEADER_EPOCH, replicas: Sequence[int] = (1, 2, 3)
) -> PartitionRecord:
    """The partition record naming ``leader``, every replica in the ISR."""
    return PartitionRecord(
        topic=TOPIC,
        partition=number,
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=7,
        replicas=list(replicas),
        isr=list(replicas),
    )
