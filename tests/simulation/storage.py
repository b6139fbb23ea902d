"""A broker's on-disk partition log in the simulation: real files, simulated power loss.

The log is the real ``PartitionLog`` in a temp directory, opened as ``SimLog``, which
tells its ``SimDisk`` of every change the broker's drivers make through it. What a crash
does to it:

- ``kill -9``: every byte written to the OS survives (the broker never buffers in
  Python), so the log is simply reopened — recovery re-validates it;
- power loss: bytes not yet fsynced are gone. We track, per segment file, the size it
  had at its last fsync and cut the file back to it before reopening.

From the crash on, the dead process's log is unplugged: a change through it raises, so
nothing the dead process's tasks do while they unwind reaches the files.

Model limits, on purpose: file creation, deletion and truncation (``ftruncate``) are
taken as durable at once, and the leader-epoch and HW checkpoints are written
atomically (temp file, fsync, rename), so only appended bytes can be lost.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from broker.record.decode import iter_batches_with_records
from broker.storage.log import AppendInfo, CheckedBatches, PartitionLog
from broker.storage.log_config import LogConfig
from tests.simulation.world import PARTITION, TOPIC, SimConfig

RecordView = tuple[bytes, int]
"""What the checker compares at one offset: (value, leader epoch of its batch)."""


class Unplugged(Exception):
    """A crashed process's task tried to change the log after the crash."""


class SimLog(PartitionLog):
    """``PartitionLog`` reporting each outermost change to its ``SimDisk`` (changes nest: a
    truncation may empty the log through ``truncate_fully_and_start_at``)."""

    disk: SimDisk
    _depth = 0

    @contextlib.contextmanager
    def _change(self, kind: str) -> Iterator[None]:
        if self.disk.log is not self:
            raise Unplugged(f"{self.directory.name}: the process that opened this log has crashed")
        self._depth += 1
        previous_end = self.log_end_offset
        try:
            yield
        finally:
            self._depth -= 1
        if self._depth == 0:
            self.disk.changed(kind, previous_end)

    def append_as_leader(self, data: bytes | bytearray | CheckedBatches, leader_epoch: int, now_ms: int) -> AppendInfo:
        with self._change("append"):
            return super().append_as_leader(data, leader_epoch, now_ms)

    def append_as_follower(self, data: bytes | bytearray | CheckedBatches, now_ms: int | None = None) -> AppendInfo:
        with self._change("append"):
            return super().append_as_follower(data, now_ms)

    def truncate_to(self, offset: int) -> None:
        with self._change("truncate"):
            super().truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        with self._change("truncate"):
            super().truncate_fully_and_start_at(offset)

    def advance_log_start_offset(self, offset: int) -> bool:
        with self._change("truncate"):
            return super().advance_log_start_offset(offset)

    def flush(self) -> None:
        with self._change("flush"):
            super().flush()


class SimDisk:
    """One broker's partition log (across its crashes) plus the fsynced size of each segment file.

    ``fsync_lies`` (a negative control): when it answers true, a flush moves the log's
    recovery point but makes nothing durable, as a disk that acknowledges an fsync it
    never did.
    """

    def __init__(self, directory: Path, config: SimConfig) -> None:
        self.directory = directory
        self.log_config = LogConfig(
            segment_bytes=config.segment_bytes,
            flush_policy=config.flush_policy,
            flush_interval_ms=config.flush_interval_ms,
            index_interval_bytes=256,
        )
        self.log: SimLog | None = None
        self.fsync_lies: Callable[[], bool] = lambda: False
        self._durable_bytes: dict[Path, int] = {}
        self.records: list[RecordView] = []
        """Decoded copy of the log from ``log.log_start_offset``, kept in step with every change."""
        self.records_base_offset = 0
        self.generation = 0
        """Bumped whenever records below the end may have changed (truncation, reload)."""

    @property
    def opened_log(self) -> SimLog:
        """The log of a running broker (a crashed one has none)."""
        assert self.log is not None, f"{self.directory.name}: the log is not open"
        return self.log

    def open(self) -> SimLog:
        """Open (or recover) the log; ``PartitionLog.open`` fsyncs what it recovered."""
        log = SimLog.open(self.directory, self.log_config, topic=TOPIC, partition=PARTITION)
        assert isinstance(log, SimLog)
        log.disk = self
        self.log = log
        self._track(flushed=True)
        self.reload_records()
        return log

    def unplug(self) -> SimLog:
        """The process crashes: from now on its log refuses every change (``Unplugged``)."""
        log = self.opened_log
        self.log = None
        return log

    def close_files(self, log: SimLog) -> None:
        """The dead process's descriptors close with no fsync (``PartitionLog.close`` would
        fsync, so only the segments' files are closed): ``kill -9``."""
        for segment in log.segments:
            segment.close()

    def lose_power(self, log: SimLog) -> None:
        """The machine loses power: the files are cut back to their fsynced sizes."""
        self.close_files(log)
        for path, size in self._durable_bytes.items():
            if path.exists() and path.stat().st_size > size:
                os.truncate(path, size)

    # -- following the changes the drivers make through ``SimLog`` ---------------------------

    def changed(self, kind: str, previous_log_end_offset: int) -> None:
        log = self.opened_log
        if kind == "flush":
            self._track(flushed=not self.fsync_lies())
            return
        self._track(flushed=False)
        if kind == "append" and log.log_start_offset == self.records_base_offset:
            self._after_append(min(previous_log_end_offset, log.log_end_offset))
        elif kind == "truncate" and log.log_start_offset == self.records_base_offset:
            self.generation += 1
            del self.records[log.log_end_offset - self.records_base_offset :]
        else:
            self.reload_records()

    # -- reading ---------------------------------------------------------------------------

    def record_at(self, offset: int) -> RecordView | None:
        """The decoded record at ``offset``; None outside ``[log start, LEO)``."""
        index = offset - self.records_base_offset
        return self.records[index] if 0 <= index < len(self.records) else None

    def read_records(self, start_offset: int, end_offset: int) -> list[tuple[int, RecordView]]:
        """Decode ``[start_offset, end_offset)`` from the files (whole batches, then trimmed)."""
        found: list[tuple[int, RecordView]] = []
        offset = start_offset
        while offset < end_offset:
            result = self.opened_log.read(offset, 1 << 20, end_offset)
            if not result.data:
                break
            found.extend(
                (offset_, view) for offset_, view in decode_views(result.data) if start_offset <= offset_ < end_offset
            )
            offset = result.next_offset
        return found

    def reload_records(self) -> None:
        """Rebuild the decoded copy from the files (after open, retention, a reset)."""
        log = self.opened_log
        self.generation += 1
        self.records_base_offset = log.log_start_offset
        found = self.read_records(log.log_start_offset, log.log_end_offset)
        if [offset for offset, _ in found] != list(range(log.log_start_offset, log.log_end_offset)):
            raise AssertionError(f"{self.directory.name}: offsets of the log are not dense")
        self.records = [view for _, view in found]

    def _after_append(self, previous_log_end_offset: int) -> None:
        """Read the appended offsets back from the files: they must be dense, epochs non-decreasing."""
        log = self.opened_log
        appended = self.read_records(previous_log_end_offset, log.log_end_offset)
        offsets = [offset for offset, _ in appended]
        expected = list(range(previous_log_end_offset, log.log_end_offset))
        if offsets != expected:
            raise AssertionError(f"{self.directory.name}: appended offsets {offsets} are not dense {expected}")
        last_epoch = self.records[-1][1] if self.records else -1
        for _, (_, epoch) in appended:
            if epoch < last_epoch:
                raise AssertionError(f"{self.directory.name}: leader epoch {epoch} follows {last_epoch} in the log")
            last_epoch = epoch
        self.records.extend(view for _, view in appended)

    def _track(self, *, flushed: bool) -> None:
        """Follow the segment set: a flush makes every size durable; a cut lowers it."""
        log = self.opened_log
        self._durable_bytes = {
            segment.log_path: (
                segment.size_bytes if flushed else min(self._durable_bytes.get(segment.log_path, 0), segment.size_bytes)
            )
            for segment in log.segments
        }


def decode_views(data: bytes) -> list[tuple[int, RecordView]]:
    """Each record of whole batches ``data`` as (offset, (value, leader epoch of its batch))."""
    return [
        (record.offset, (record.value or b"", header.partition_leader_epoch))
        for header, batch in iter_batches_with_records(data)
        for record in batch
    ]
