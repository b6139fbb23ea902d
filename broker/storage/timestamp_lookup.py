"""From the batch that first reaches a timestamp to the exact record offset.

The time index narrows a ListOffsets-by-timestamp query to one batch (the first whose
``max_timestamp`` reaches the target); only that batch is decoded to find the first
record at or after the target, as Kafka's ``LogSegment.findOffsetByTimestamp`` does.
A LogAppendTime batch gives every record the batch's timestamp, so its base offset is
the answer without decoding.
"""

from __future__ import annotations

from broker.record.decode import decode_batch
from broker.record.header import BatchHeader

LOG_APPEND_TIME = 1


def exact_offset_for_timestamp(batch: bytes, header: BatchHeader, timestamp_ms: int, log_start_offset: int) -> int:
    """First record offset >= ``log_start_offset`` with timestamp >= ``timestamp_ms`` in ``batch``.

    Falls back to the batch's first visible offset when no record qualifies (the
    record carrying the batch's max timestamp lies below the log start offset).
    """
    first_visible = max(header.base_offset, log_start_offset)
    if header.timestamp_type == LOG_APPEND_TIME:
        return first_visible
    _, records = decode_batch(batch)
    for record in records:
        if record.offset >= log_start_offset and record.timestamp >= timestamp_ms:
            return record.offset
    return first_visible
