"""Errors the consumer raises to the application."""

from __future__ import annotations

from broker.client.types import TopicPartition
from broker.errors import HighwaterError, OffsetOutOfRange


class OffsetOutOfRangeError(OffsetOutOfRange):
    """The position lies outside the partition's log and ``auto_offset_reset`` is ``none``.

    ``details`` carry ``topic``, ``partition``, ``offset``, ``log_start_offset`` and
    ``log_end_offset``; ``seek`` to a valid offset and read on.
    """

    name = "OFFSET_OUT_OF_RANGE"


class NoOffsetForPartitionError(OffsetOutOfRangeError):
    """An assigned partition has no position (never seeked) and ``auto_offset_reset`` is ``none``."""


class LogTruncationError(HighwaterError):
    """Records this consumer already handed out are no longer in the partition's log.

    A leader that lacked them took over (an unclean election, or a topic deleted and
    created again): the log was truncated at ``divergent_offset`` and may since hold
    different records at the same offsets. Raised only with ``auto_offset_reset=none``;
    otherwise the consumer logs a warning and resets. ``seek`` to go on.
    """

    name = "LOG_TRUNCATION"
    error_code = 40903
    http_status = 409

    def __init__(self, tp: TopicPartition, position: int, divergent_offset: int, reason: str) -> None:
        super().__init__(
            f"{tp.topic}-{tp.partition}: log truncated at offset {divergent_offset} below the consumer's "
            f"position {position} ({reason}); records already consumed may be gone or replaced",
            topic=tp.topic,
            partition=tp.partition,
            position=position,
            divergent_offset=divergent_offset,
        )
        self.tp = tp
        self.position = position
        self.divergent_offset = divergent_offset


class CommitFailedError(HighwaterError):
    """The coordinator refused a commit because this member is no longer in the group.

    It was expelled (session or rebalance timeout) or rejoined under a new epoch; the
    partitions it was committing may be read by another member now, so its offsets must
    not overwrite theirs. The consumer rejoins on its own; records handed out since the
    last successful commit will be read again by whoever owns the partitions next.
    """

    name = "COMMIT_FAILED"
    error_code = 40913
    http_status = 409
