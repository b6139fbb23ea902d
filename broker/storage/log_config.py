"""Per-topic settings of a partition log, named and defaulted as Kafka's topic configs.

Invariant enforced at construction: every size fits the on-disk formats — a segment
position is an int32 in the ``.index`` file, so ``segment_bytes`` stays below 2 GiB.
"""

from __future__ import annotations

from dataclasses import dataclass

from broker.errors import InvalidConfig

FLUSH_FSYNC = "fsync"
FLUSH_INTERVAL = "interval"
FLUSH_OS = "os"
FLUSH_POLICIES = (FLUSH_FSYNC, FLUSH_INTERVAL, FLUSH_OS)
CLEANUP_DELETE = "delete"
CLEANUP_COMPACT = "compact"
CLEANUP_POLICIES = (CLEANUP_DELETE, CLEANUP_COMPACT)

MAX_SEGMENT_BYTES = 2**31 - 1
"""Largest position a 32-bit ``.index`` entry can hold."""

_GIB = 1 << 30
_MIB = 1 << 20
_DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True, slots=True)
class LogConfig:
    """``segment.bytes``, ``segment.ms``, ``retention.ms`` ... with Kafka's defaults.

    ``flush_policy``: ``fsync`` (group-committed fsync before an acks=all answer, our
    default), ``interval`` (fsync every ``flush_interval_ms`` in the background) or
    ``os`` (leave it to the page cache, Kafka's default; fsync only on close).
    ``retention_ms``/``retention_bytes`` of -1 mean unlimited.
    """

    segment_bytes: int = _GIB
    segment_ms: int = 7 * _DAY_MS
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    max_message_bytes: int = _MIB
    flush_policy: str = FLUSH_FSYNC
    flush_interval_ms: int = 1000
    cleanup_policy: str = CLEANUP_DELETE
    delete_retention_ms: int = _DAY_MS

    def __post_init__(self) -> None:
        if not 0 < self.segment_bytes <= MAX_SEGMENT_BYTES:
            raise InvalidConfig(f"segment_bytes must be in 1..{MAX_SEGMENT_BYTES}, got {self.segment_bytes}")
        if self.segment_ms <= 0:
            raise InvalidConfig(f"segment_ms must be positive, got {self.segment_ms}")
        if self.index_interval_bytes < 0:
            raise InvalidConfig(f"index_interval_bytes must be >= 0, got {self.index_interval_bytes}")
        if self.retention_ms < -1 or self.retention_bytes < -1:
            raise InvalidConfig("retention_ms and retention_bytes must be >= 0, or -1 for unlimited")
        if self.max_message_bytes <= 0:
            raise InvalidConfig(f"max_message_bytes must be positive, got {self.max_message_bytes}")
        if self.flush_policy not in FLUSH_POLICIES:
            raise InvalidConfig(f"flush_policy must be one of {FLUSH_POLICIES}, got {self.flush_policy!r}")
        if self.flush_interval_ms <= 0:
            raise InvalidConfig(f"flush_interval_ms must be positive, got {self.flush_interval_ms}")
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise InvalidConfig(f"cleanup_policy must be one of {CLEANUP_POLICIES}, got {self.cleanup_policy!r}")
