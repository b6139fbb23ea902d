"""What a broker's log directory holds: the bytes of each replica on it (Kafka's DescribeLogDirs, at both doors).

highwater keeps one log directory per broker, its ``data_dir``. Both the HTTP route
(``GET …/brokers/{b}/log-dirs``) and the Kafka door's DescribeLogDirs describe it from
``log_dir_usage``, so the two answer the same figures.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from broker.replica_io.partition import Partition


@dataclass(frozen=True, slots=True)
class ReplicaBytes:
    topic: str
    partition: int
    size_bytes: int
    log_end_offset: int
    offset_lag: int
    """Kafka's: how far the replica's log end is below its high watermark (0 for every replica highwater
    keeps: a replica's high watermark never passes its own log end; moves copy into new replicas, not
    into "future" logs beside the current ones)."""


@dataclass(frozen=True, slots=True)
class LogDirUsage:
    path: str
    replicas: tuple[ReplicaBytes, ...]
    total_bytes: int
    """The size of the file system holding it; ``usable_bytes`` is what is free there."""
    usable_bytes: int

    @property
    def size_bytes(self) -> int:
        return sum(replica.size_bytes for replica in self.replicas)


def log_dir_usage(data_dir: Path, partitions: Mapping[tuple[str, int], Partition]) -> LogDirUsage:
    """The replicas in ``partitions`` (this broker's), in topic and partition order, with the file system's sizes."""
    replicas = tuple(
        ReplicaBytes(
            topic,
            number,
            replica.log.size_bytes,
            replica.log_end_offset,
            max(0, replica.high_watermark - replica.log_end_offset),
        )
        for (topic, number), replica in sorted(partitions.items())
    )
    disk = shutil.disk_usage(data_dir)
    return LogDirUsage(str(data_dir), replicas, disk.total, disk.free)
