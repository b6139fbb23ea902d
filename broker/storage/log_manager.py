"""All partition logs of one broker data directory (Kafka's ``LogManager``).

Layout of ``data_dir``::

    <topic>-<partition>/                      one directory per partition replica
    recovery-point-offset-checkpoint          fsynced offset per partition
    log-start-offset-checkpoint               low watermark per partition
    replication-offset-checkpoint             high watermark per partition (written by replication)
    clean-shutdown                            present only after ``close_all``

Topic names may contain '-', so a directory name is split at its *last* '-'.

Recovery rule: after a clean shutdown (the marker is present) every log was flushed
and checkpointed, so nothing is re-validated. Otherwise each log re-validates from
its checkpointed recovery point (0 when unknown: everything). The marker is removed
once loading is done, so a crash from then on is recovered next time.

Checkpoint rule: this class is the only writer of the three data-dir checkpoints, and
every write computes its content and renames it into place under one lock. Deleting a
log, the broker's periodic checkpoint task and shutdown all write them from executor
threads; without the lock an older content could land after a newer one.
"""

from __future__ import annotations

import re
import shutil
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import structlog

from broker.errors import InvalidTopic
from broker.storage.checkpoint import OffsetCheckpointFile, delete_stray_temp_files, fsync_directory
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig

logger = structlog.get_logger(__name__)

RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT_FILE = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = "clean-shutdown"
DELETED_DIRECTORY_SUFFIX = "-delete"
TRUST_WHOLE_LOG = 2**63 - 1
"""Recovery point meaning "all of it was flushed": nothing is re-validated."""

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")

TopicPartition = tuple[str, int]


def partition_directory_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


def parse_partition_directory_name(name: str) -> TopicPartition | None:
    """``(topic, partition)`` from ``topic-partition`` split at the last '-'; None if not one."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not partition.isdigit() or not _LEGAL_TOPIC.match(topic) or topic in (".", ".."):
        return None
    return topic, int(partition)


def validate_topic(topic: str) -> None:
    if not _LEGAL_TOPIC.match(topic) or topic in (".", ".."):
        raise InvalidTopic(
            f"topic name {topic!r} is illegal: use 1-249 characters of ASCII letters, digits, '.', '_' and '-'"
        )


@dataclass(eq=False)
class DetachedLog:
    """A log the manager no longer hands out, until ``delete_detached`` removes it."""

    log: PartitionLog
    doomed: Path | None = None
    """Where its directory was moved, once it was."""


class LogManager:
    """Opens, creates, checkpoints and closes every ``PartitionLog`` under ``data_dir``."""

    def __init__(self, data_dir: Path, default_config: LogConfig) -> None:
        self.data_dir = Path(data_dir)
        self.default_config = default_config
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.recovery_point_checkpoint = OffsetCheckpointFile(self.data_dir / RECOVERY_POINT_CHECKPOINT_FILE)
        self.log_start_offset_checkpoint = OffsetCheckpointFile(self.data_dir / LOG_START_OFFSET_CHECKPOINT_FILE)
        self.high_watermark_checkpoint = OffsetCheckpointFile(self.data_dir / HIGH_WATERMARK_CHECKPOINT_FILE)
        self._logs: dict[TopicPartition, PartitionLog] = {}
        self._detached: list[DetachedLog] = []
        """Logs ``detach`` took away whose deletion has not finished: still in their directories until moved."""
        self._lock = threading.Lock()
        self._checkpoint_lock = threading.Lock()

    @property
    def clean_shutdown_marker(self) -> Path:
        return self.data_dir / CLEAN_SHUTDOWN_FILE

    def load_all(self, topic_configs: dict[str, LogConfig] | None = None) -> dict[TopicPartition, PartitionLog]:
        """Open every partition directory, recovering what the last shutdown left unflushed."""
        topic_configs = topic_configs or {}
        clean = self.clean_shutdown_marker.exists()
        for stray in delete_stray_temp_files(self.data_dir):
            logger.info("log_manager.stray_checkpoint_temp_deleted", path=str(stray))
        for doomed in self.data_dir.glob("*" + DELETED_DIRECTORY_SUFFIX):
            shutil.rmtree(doomed, ignore_errors=True)
            logger.info("log_manager.interrupted_delete_finished", path=str(doomed))
        recovery_points = self.recovery_point_checkpoint.read()
        log_start_offsets = self.log_start_offset_checkpoint.read()
        for directory in sorted(self.data_dir.iterdir()):
            parsed = parse_partition_directory_name(directory.name) if directory.is_dir() else None
            if parsed is None:
                continue
            topic, partition = parsed
            log = PartitionLog.open(
                directory,
                topic_configs.get(topic, self.default_config),
                topic=topic,
                partition=partition,
                recovery_point=TRUST_WHOLE_LOG if clean else recovery_points.get(parsed, 0),
                log_start_offset=log_start_offsets.get(parsed, 0),
            )
            with self._lock:
                self._logs[parsed] = log
        if clean:
            self.clean_shutdown_marker.unlink()
            fsync_directory(self.data_dir)
        logger.info("log_manager.loaded", data_dir=str(self.data_dir), partitions=len(self._logs), clean_shutdown=clean)
        return self.logs()

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> PartitionLog:
        """The log of ``topic-partition``, created empty at offset 0 if this broker has none yet.

        A detached log of the partition still in its directory is moved away first, so the new
        log never opens the old one's files.
        """
        validate_topic(topic)
        if partition < 0:
            raise InvalidTopic(f"partition {partition} of {topic!r} is negative")
        with self._lock:
            log = self._logs.get((topic, partition))
            if log is None:
                for detached in self._detached:
                    if (detached.log.topic, detached.log.partition) == (topic, partition):
                        self._move_away(detached)
                directory = self.data_dir / partition_directory_name(topic, partition)
                log = PartitionLog.open(directory, config or self.default_config, topic=topic, partition=partition)
                self._logs[(topic, partition)] = log
            elif config is not None:
                log.update_config(config)
            return log

    def detach(self, topic: str, partition: int) -> DetachedLog | None:
        """Take the log away at once, without I/O, for ``delete_detached`` to remove (None: there is none).

        The broker detaches a deleted partition's log on its event loop and removes it in a
        worker thread. Before, the whole deletion ran in the thread, and a topic deleted and
        created again at once reopened the old log (its records, its end offset) before the
        thread closed it under the new partition: its next append failed on a closed file.
        """
        with self._lock:
            log = self._logs.pop((topic, partition), None)
            if log is None:
                return None
            detached = DetachedLog(log)
            self._detached.append(detached)
            return detached

    def delete_detached(self, detached: DetachedLog) -> None:
        """Close the detached log, move its directory to ``<name>.<unique>-delete`` (Kafka's suffix) and
        remove it. A crash mid-delete leaves a doomed directory that the next ``load_all`` removes."""
        with self._lock:
            doomed = self._move_away(detached)
            self._detached.remove(detached)
        shutil.rmtree(doomed, ignore_errors=True)
        fsync_directory(self.data_dir)
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        logger.info("log_manager.log_deleted", topic=detached.log.topic, partition=detached.log.partition)

    def delete(self, topic: str, partition: int) -> bool:
        """``detach`` then ``delete_detached``; whether there was a log."""
        detached = self.detach(topic, partition)
        if detached is None:
            return False
        self.delete_detached(detached)
        return True

    def _move_away(self, detached: DetachedLog) -> Path:
        """Close the detached log and move its directory out of the way, once; where it went (lock held)."""
        if detached.doomed is None:
            directory = detached.log.directory
            detached.doomed = directory.with_name(f"{directory.name}.{uuid.uuid4().hex}{DELETED_DIRECTORY_SUFFIX}")
            detached.log.close_and_move(detached.doomed)
        return detached.doomed

    def logs(self) -> dict[TopicPartition, PartitionLog]:
        with self._lock:
            return dict(self._logs)

    def checkpoint_recovery_points(self) -> None:
        with self._checkpoint_lock:
            self.recovery_point_checkpoint.write({key: log.recovery_point for key, log in self.logs().items()})

    def checkpoint_log_start_offsets(self) -> None:
        with self._checkpoint_lock:
            self.log_start_offset_checkpoint.write({key: log.log_start_offset for key, log in self.logs().items()})

    def checkpoint_high_watermarks(self, high_watermarks: dict[TopicPartition, int]) -> None:
        """Replication owns the values; this class owns the file and its one lock."""
        with self._checkpoint_lock:
            self.high_watermark_checkpoint.write(high_watermarks)

    def checkpoint_all(self, high_watermarks: dict[TopicPartition, int]) -> None:
        self.checkpoint_high_watermarks(high_watermarks)
        self.checkpoint_log_start_offsets()
        self.checkpoint_recovery_points()

    def close_all(self) -> None:
        """Flush and close every log, checkpoint, then mark the shutdown clean."""
        logs = self.logs()
        for log in logs.values():
            log.close()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.clean_shutdown_marker.touch()
        fsync_directory(self.data_dir)
        with self._lock:
            self._logs.clear()
        logger.info("log_manager.closed", data_dir=str(self.data_dir), partitions=len(logs))
