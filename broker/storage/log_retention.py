"""Which segments retention deletes: Kafka's ``deleteRetentionMsBreachedSegments``,
``deleteRetentionSizeBreachedSegments`` and ``deleteLogStartOffsetBreachedSegments``.

Invariant (the reason the high watermark is a parameter): a segment is deleted only
when every offset in it is below the high watermark, so retention never removes a
record a consumer could not yet see or a follower may still need to match; and never
the active segment. Deletion goes oldest first and stops at the first segment kept,
so the log stays one contiguous range.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.storage.log_config import LogConfig
from broker.storage.segment import LogSegment


def _breach(
    segment: LogSegment, config: LogConfig, now_ms: int, log_start_offset: int, excess_bytes: int
) -> str | None:
    if segment.next_offset <= log_start_offset:
        return "log_start_offset"
    if config.retention_ms >= 0 and now_ms - segment.max_timestamp_ms > config.retention_ms:
        return "retention_ms"
    if config.retention_bytes >= 0 and excess_bytes >= segment.size_bytes:
        return "retention_bytes"
    return None


def segments_to_retire(
    segments: Sequence[LogSegment],
    config: LogConfig,
    *,
    now_ms: int,
    high_watermark: int,
    log_start_offset: int,
) -> list[tuple[LogSegment, str]]:
    """The oldest segments to delete, each with the rule it breached."""
    excess_bytes = sum(segment.size_bytes for segment in segments) - config.retention_bytes
    retired = []
    for segment in segments[:-1]:
        if segment.next_offset > high_watermark:
            break
        reason = _breach(segment, config, now_ms, log_start_offset, excess_bytes)
        if reason is None:
            break
        retired.append((segment, reason))
        excess_bytes -= segment.size_bytes
    return retired
