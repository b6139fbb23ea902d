"""Segment files, indexes, the partition log, checkpoints, recovery and group-commit flushing."""

from broker.storage.checkpoint import (
    CorruptCheckpoint,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    write_atomically,
)
from broker.storage.epoch_cache import EpochEntry, LeaderEpochCache
from broker.storage.flusher import GroupCommitFlusher, IntervalFlusher
from broker.storage.log import (
    AppendInfo,
    PartitionLog,
    ReadResult,
)
from broker.storage.log_config import FLUSH_FSYNC, FLUSH_INTERVAL, FLUSH_OS, LogConfig
from broker.storage.log_manager import LogManager

__all__ = [
    "FLUSH_FSYNC",
    "FLUSH_INTERVAL",
    "FLUSH_OS",
    "AppendInfo",
    "CorruptCheckpoint",
    "EpochEntry",
    "GroupCommitFlusher",
    "IntervalFlusher",
    "LeaderEpochCache",
    "LeaderEpochCheckpointFile",
    "LogConfig",
    "LogManager",
    "OffsetCheckpointFile",
    "PartitionLog",
    "ReadResult",
    "write_atomically",
]
