"""Where a follower's fetch stands against the leader's log (KIP-320 / KIP-595).

Kafka's ``Partition.fetchRecords`` for a follower, after fencing: the follower sends
its ``fetch_offset`` (its LEO) and ``last_fetched_epoch`` (the latest epoch in its own
epoch cache). The leader looks that epoch up with ``end_offset_for`` in *its* cache:

1. it knows no epoch <= last_fetched_epoch -> OFFSET_OUT_OF_RANGE;
2. the fetch offset is below the log start -> OFFSET_OUT_OF_RANGE, whatever the epochs;
3. the answer is another (smaller) epoch, or the epoch ends before ``fetch_offset`` ->
   the follower's log diverges: answer ``DivergingEpoch(epoch, end_offset)`` and the
   follower truncates to where they agree (``FollowerState.on_diverging_epoch``);
4. otherwise the plain range check: ``log_start_offset <= fetch_offset <= log_end_offset``.

A follower without any epoch (``UNDEFINED_EPOCH``) skips 1-3. Pure.
"""

from __future__ import annotations

from broker.errors import OffsetOutOfRange
from broker.replication.actions import DivergingEpoch
from broker.storage.epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochCache,
)


def check_fetch_position(
    topic: str,
    partition: int,
    fetch_offset: int,
    last_fetched_epoch: int,
    *,
    log_start_offset: int,
    log_end_offset: int,
    epoch_cache: LeaderEpochCache,
) -> OffsetOutOfRange | DivergingEpoch | None:
    """The out-of-range error or diverging epoch this fetch must get, or ``None``."""
    if last_fetched_epoch != UNDEFINED_EPOCH:
        end_epoch, end_offset = epoch_cache.end_offset_for(last_fetched_epoch, log_end_offset)
        if end_epoch == UNDEFINED_EPOCH or end_offset == UNDEFINED_EPOCH_OFFSET:
            return out_of_range(topic, partition, fetch_offset, log_start_offset, log_end_offset)
        if fetch_offset >= log_start_offset and (end_epoch != last_fetched_epoch or end_offset < fetch_offset):
            return DivergingEpoch(end_epoch, end_offset)
    if not log_start_offset <= fetch_offset <= log_end_offset:
        return out_of_range(topic, partition, fetch_offset, log_start_offset, log_end_offset)
    return None


def out_of_range(
    topic: str,
    partition: int,
    fetch_offset: int,
    log_start_offset: int,
    log_end_offset: int,
) -> OffsetOutOfRange:
    """OFFSET_OUT_OF_RANGE naming the leader's range, so the follower can re-position."""
    return OffsetOutOfRange(
        f"fetch offset {fetch_offset} of {topic}-{partition} is outside [{log_start_offset}, {log_end_offset}]",
        topic=topic,
        partition=partition,
        log_start_offset=log_start_offset,
        log_end_offset=log_end_offset,
    )
