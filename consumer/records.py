"""What the consumer hands out: one record with its partition, offset and batch leader epoch."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    """A record read below the high watermark; ``timestamp`` in ms, ``timestamp_type`` 0 = create, 1 = log append.

    ``leader_epoch`` is the epoch of the leader that appended the record's batch; the
    consumer remembers the last one it handed out to detect log truncation.
    """

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    leader_epoch: int = -1
