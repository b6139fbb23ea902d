"""Walk the record batches of a ``.log`` file with ``pread``, window by window.

Recovery, index rebuilds and offset lookups all need the same loop: from a byte
position, decode each batch header with ``broker.record.header.read_header`` (and,
during recovery, check its CRC with ``validate_batch``) until the end position. The
file is read in windows of ``window_bytes`` so a scan costs few system calls; a batch
larger than the window is read whole on its own. ``pread`` never moves a file
offset, so scans run safely beside the appender.

A batch that is cut short by the end position, claims an impossible length, or fails
its check stops the scan with ``TornBatch`` naming the position: everything before it
is whole, everything from it on is not to be trusted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import NamedTuple

from broker.errors import CorruptRecord
from broker.record.header import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    BatchHeader,
    peek_size,
    read_header,
    validate_batch,
)

DEFAULT_WINDOW_BYTES = 1 << 20


class TornBatch(Exception):
    """The batch at ``position`` is incomplete or corrupt; the log is whole only before it."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"torn or corrupt batch at byte {position}: {reason}")
        self.position = position
        self.reason = reason


class ScannedBatch(NamedTuple):
    """A batch header and the file position where the batch starts."""

    position: int
    header: BatchHeader


def scan_batches(
    fd: int,
    start_position: int,
    end_position: int,
    *,
    check_crc: bool,
    window_bytes: int = DEFAULT_WINDOW_BYTES,
) -> Iterator[ScannedBatch]:
    """Yield each whole batch in ``[start_position, end_position)``; raise ``TornBatch`` at a bad one."""
    check = validate_batch if check_crc else read_header
    window = b""
    window_start = start_position
    position = start_position
    while position < end_position:
        remaining = end_position - position
        if remaining < LOG_OVERHEAD:
            raise TornBatch(position, f"only {remaining} bytes left, fewer than a batch length prefix")
        relative = position - window_start
        if relative + LOG_OVERHEAD > len(window):
            window, window_start, relative = os.pread(fd, min(window_bytes, remaining), position), position, 0
        size = peek_size(window, relative)
        if size is None or size < RECORD_BATCH_OVERHEAD:
            raise TornBatch(position, f"impossible batch size {size}")
        if size > remaining:
            raise TornBatch(position, f"batch of {size} bytes but only {remaining} bytes left")
        if relative + size > len(window):
            window, window_start, relative = (
                os.pread(fd, min(max(window_bytes, size), remaining), position),
                position,
                0,
            )
            if len(window) < size:
                raise TornBatch(position, f"file ended after {len(window)} of {size} bytes")
        try:
            header = check(window, relative)
        except CorruptRecord as error:
            raise TornBatch(position, error.message) from error
        yield ScannedBatch(position, header)
        position += size
