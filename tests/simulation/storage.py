"""A broker's on-disk partition log in the simulation: real files, simulated power loss.

The log is the real ``PartitionLog`` in a temp directory. What a crash does to it:

- ``kill -9``: every byte written to the OS survives (the broker never buffers in
  Python), so the log is simply reopened — recovery re-validates it;
- power loss: bytes not yet fsynced are gone. We track, per segment file, the size it
  had at its last fsync and cut the file back to it before reopening.

Model limits, on purpose: file creation, deletion and truncation (``ftruncate``) are
taken as durable at once, and the leader-epoch and HW checkpoints are written
atomically (temp file, fsync, rename), so only appended bytes can be lost.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.record.decode import iter_batches_with_records
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from tests.simulation.world import PARTITION, TOPIC, SimConfig

RecordView = tuple[bytes, int]
"""What the checker compares at one offset: (value, leader epoch of its batch)."""


class SimDisk:
    """One broker's partition log plus the fsynced size of each segment file."""

    def __init__(self, directory: Path, config: SimConfig) -> None:
        self.directory = directory
        self.log_config = LogConfig(
            segment_bytes=config.segment_bytes,
            flush_policy=config.flush_policy,
            flush_interval_ms=config.flush_interval_ms,
            index_interval_bytes=256,
        )
        self.log: PartitionLog | None = None
        self._durable_bytes: dict[Path, int] = {}
        self.records: list[RecordView] = []
        """Decoded copy of the log from ``log.log_start_offset``, kept in step with every change."""
        self.records_base_offset = 0
        self.generation = 0
        """Bumped whenever records below the end may have changed (truncation, reload)."""

    @property
    def opened_log(self) -> PartitionLog:
        """The log of a running broker (a crashed one has none)."""
        assert self.log is not None, f"{self.directory.name}: the log is not open"
        return self.log

    def open(self) -> PartitionLog:
        """Open (or recover) the log; ``PartitionLog.open`` fsyncs what it recovered."""
        self.log = PartitionLog.open(self.directory, self.log_config, topic=TOPIC, partition=PARTITION)
        self._track(flushed=True)
        self.reload_records()
        return self.log

    def crash(self, power_loss: bool) -> None:
        """The process dies: its descriptors close with no fsync (``PartitionLog.close`` would
        fsync, so only the segments' files are closed); then maybe lose unflushed bytes."""
        assert self.log is not None
        for segment in self.log.segments:
            segment.close()
        self.log = None
        if power_loss:
            for path, size in self._durable_bytes.items():
                if path.exists() and path.stat().st_size > size:
                    os.truncate(path, size)

    # -- changes made through the disk, so the durability map and the decoded copy follow --

    def flush(self) -> None:
        assert self.log is not None
        self.log.flush()
        self._track(flushed=True)

    def append_as_leader(self, batch: bytes, leader_epoch: int, now_ms: int):
        assert self.log is not None
        before = self.log.log_end_offset
        info = self.log.append_as_leader(batch, leader_epoch, now_ms)
        self._after_append(before)
        return info

    def append_as_follower(self, records: bytes, now_ms: int) -> None:
        assert self.log is not None
        before = self.log.log_end_offset
        self.log.append_as_follower(records, now_ms)
        self._after_append(before)

    def truncate_to(self, offset: int) -> None:
        assert self.log is not None
        self.log.truncate_to(offset)
        self._track(flushed=False)
        self.generation += 1
        if self.log.log_start_offset != self.records_base_offset:
            self.reload_records()
        else:
            del self.records[self.log.log_end_offset - self.records_base_offset :]

    def truncate_fully_and_start_at(self, offset: int) -> None:
        assert self.log is not None
        self.log.truncate_fully_and_start_at(offset)
        self._track(flushed=False)
        self.generation += 1
        self.records = []
        self.records_base_offset = offset

    def advance_log_start_offset(self, offset: int) -> None:
        assert self.log is not None
        if self.log.advance_log_start_offset(offset):
            self.reload_records()

    # -- reading ---------------------------------------------------------------------------

    def read_records(self, start_offset: int, end_offset: int) -> list[tuple[int, RecordView]]:
        """Decode ``[start_offset, end_offset)`` from the files (whole batches, then trimmed)."""
        assert self.log is not None
        found: list[tuple[int, RecordView]] = []
        offset = start_offset
        while offset < end_offset:
            result = self.log.read(offset, 1 << 20, end_offset)
            if not result.data:
                break
            for header, batch in iter_batches_with_records(result.data):
                for record in batch:
                    if start_offset <= record.offset < end_offset:
                        found.append((record.offset, (record.value or b"", header.partition_leader_epoch)))
            offset = result.next_offset
        return found

    def reload_records(self) -> None:
        """Rebuild the decoded copy from the files (after open, retention)."""
        assert self.log is not None
        self.generation += 1
        self.records_base_offset = self.log.log_start_offset
        found = self.read_records(self.log.log_start_offset, self.log.log_end_offset)
        if [offset for offset, _ in found] != list(range(self.log.log_start_offset, self.log.log_end_offset)):
            raise AssertionError(f"{self.directory.name}: offsets of the recovered log are not dense")
        self.records = [view for _, view in found]

    def _after_append(self, previous_log_end_offset: int) -> None:
        """Read the appended offsets back from the files: they must be dense, epochs non-decreasing."""
        assert self.log is not None
        self._track(flushed=False)
        appended = self.read_records(previous_log_end_offset, self.log.log_end_offset)
        offsets = [offset for offset, _ in appended]
        expected = list(range(previous_log_end_offset, self.log.log_end_offset))
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
        assert self.log is not None
        self._durable_bytes = {
            segment.log_path: (
                segment.size_bytes if flushed else min(self._durable_bytes.get(segment.log_path, 0), segment.size_bytes)
            )
            for segment in self.log.segments
        }
