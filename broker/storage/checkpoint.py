"""Atomic checkpoint files in Apache Kafka's text format.

Every checkpoint is written to a temp file of its own (``<name>.<random>.tmp``), fsynced,
renamed over the old file and the directory fsynced, so a crash leaves either the old or
the new file, never a torn one (invariant 10 of the replication reference). The temp
name is unique per write: two writers of one file each rename their own complete temp
file, so neither can rename away the other's (a shared ``<name>.tmp`` let one writer's
rename take the file the other was about to rename, which then failed with
``FileNotFoundError``). Whoever owns a checkpoint still serialises its writers, so the
last rename is also the newest content. Leftover temp files of a crash end in ``.tmp``
and are removed at the next start. Format, as Kafka's
``CheckpointFile``::

    0                      version
    N                      number of entries
    <entry> x N            one per line

Offset checkpoints (``replication-offset-checkpoint``, ``log-start-offset-checkpoint``,
``recovery-point-offset-checkpoint``) hold ``topic partition offset`` lines; the
``leader-epoch-checkpoint`` of a partition holds ``epoch start_offset`` lines.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from broker.errors import KafkaStorageError
from broker.storage.epoch_cache import EpochEntry

CHECKPOINT_VERSION = 0
TEMP_SUFFIX = ".tmp"


class CorruptCheckpoint(KafkaStorageError):
    """A checkpoint file exists but does not parse; the message names the file."""


def fsync_directory(directory: Path) -> None:
    """Make a rename or an unlink in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content."""
    fd, temp_name = tempfile.mkstemp(prefix=path.name + ".", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        try:
            os.fchmod(fd, 0o644)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def delete_stray_temp_files(directory: Path) -> list[Path]:
    """Remove the temp files of checkpoint writes a crash interrupted; run before any write."""
    removed = [path for path in directory.glob("*" + TEMP_SUFFIX) if path.is_file()]
    for path in removed:
        path.unlink()
    return removed


def _render(lines: list[str]) -> bytes:
    return "\n".join([str(CHECKPOINT_VERSION), str(len(lines)), *lines, ""]).encode()


def _parse(path: Path, fields_per_line: int) -> list[list[str]] | None:
    """Entry lines split into fields; None when the file does not exist."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as error:
        raise CorruptCheckpoint(f"checkpoint file {path} is not text: {error}", path=str(path)) from error
    lines = text.splitlines()
    if len(lines) < 2 or lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CorruptCheckpoint(f"checkpoint file {path} has a missing or unknown version line", path=str(path))
    try:
        expected = int(lines[1])
    except ValueError:
        raise CorruptCheckpoint(f"checkpoint file {path} has a bad entry count {lines[1]!r}", path=str(path)) from None
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != expected:
        raise CorruptCheckpoint(
            f"checkpoint file {path} says {expected} entries but holds {len(entries)}", path=str(path)
        )
    for entry in entries:
        if len(entry) != fields_per_line:
            raise CorruptCheckpoint(f"checkpoint file {path} has a malformed line {' '.join(entry)!r}", path=str(path))
    return entries


def _to_int(path: Path, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CorruptCheckpoint(f"checkpoint file {path} has a non-integer value {value!r}", path=str(path)) from None


class OffsetCheckpointFile:
    """``topic partition offset`` per line: high watermarks, log start offsets, recovery points.

    A write of exactly what this object last wrote is skipped: the file already holds it,
    synced. The periodic checkpoint of an idle broker would otherwise rewrite and fsync
    three unchanged files (and their directory) every interval. Writes of one file are
    serialised by its one writer (``LogManager``'s checkpoint lock), so what was last
    written is what the file holds.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._written: dict[tuple[str, int], int] | None = None

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        """Write ``offsets`` unless they are what was last written (compared before any rendering:
        sorting and formatting 10 000 lines every interval was a third of an idle broker's checkpoint)."""
        if offsets == self._written:
            return
        lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
        write_atomically(self.path, _render(lines))
        self._written = dict(offsets)

    def read(self) -> dict[tuple[str, int], int]:
        """The checkpointed offsets; empty when the file does not exist."""
        entries = _parse(self.path, 3)
        if entries is None:
            return {}
        return {
            (topic, _to_int(self.path, partition)): _to_int(self.path, offset) for topic, partition, offset in entries
        }


class LeaderEpochCheckpointFile:
    """``epoch start_offset`` per line: the persisted ``LeaderEpochCache``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def write(self, entries: list[EpochEntry]) -> None:
        write_atomically(self.path, _render([f"{entry.epoch} {entry.start_offset}" for entry in entries]))

    def read(self) -> list[EpochEntry]:
        """The checkpointed entries; empty when the file does not exist."""
        entries = _parse(self.path, 2)
        if entries is None:
            return []
        return [EpochEntry(_to_int(self.path, epoch), _to_int(self.path, start)) for epoch, start in entries]
