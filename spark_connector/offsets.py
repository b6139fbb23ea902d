"""Offsets of a query and the pure arithmetic of planning micro-batches.

An offset of the source is, per partition, the *next* offset to read: a micro-batch
``[start, end)`` reads ``start[tp] <= offset < end[tp]``. Spark stores offsets as JSON
and compares them as JSON strings, so ``to_json_dict`` always emits topics and
partitions in sorted order: two equal offsets must serialise to the same text, or
Spark would see a "new" offset and plan an empty batch on every trigger.

Everything here is pure (no I/O), so the planning rules are unit-tested directly:

* ``fair_share``: a row budget split across partitions by water-filling, so a busy
  partition cannot starve a quiet one and the total never exceeds the budget;
* ``split_range``: a large range becomes several input partitions of at most
  ``max_records`` offsets, so one busy partition still spreads over the executors;
* ``delays_batch``: ``minOffsetsPerTrigger`` with ``maxTriggerDelay``, Spark's rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from broker.client.types import TopicPartition

K = TypeVar("K")

PartitionOffsets = dict[TopicPartition, int]


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """``{"topic": {"partition": next_offset}}`` with topics and partitions sorted (numerically)."""
    result: dict[str, dict[str, int]] = {}
    for topic_partition in sorted(offsets):
        result.setdefault(topic_partition.topic, {})[str(topic_partition.partition)] = offsets[topic_partition]
    return result


def from_json_dict(offsets: Mapping[str, Any] | None) -> PartitionOffsets:
    """The inverse of ``to_json_dict``; Spark hands offsets back as parsed JSON."""
    return {
        TopicPartition(topic, int(partition)): int(offset)
        for topic, partitions in (offsets or {}).items()
        for partition, offset in partitions.items()
    }


def fair_share(available: Mapping[TopicPartition, int], max_rows: int) -> PartitionOffsets:
    """Rows each partition may read: at most ``available[tp]``, at most ``max_rows`` in total.

    Water-filling: partitions with fewer rows than an equal share get all of them, and
    the rest split what remains equally; the remainder of an uneven split goes to
    partitions in sorted order, so the answer is deterministic. Invariants:
    ``sum(result) == min(max_rows, sum(available))`` and ``0 <= result[tp] <= available[tp]``.
    """
    granted = {tp: 0 for tp in available}
    remaining = max_rows
    hungry = sorted((tp for tp, rows in available.items() if rows > 0), key=lambda tp: (available[tp], tp))
    while hungry and remaining > 0:
        share = remaining // len(hungry)
        smallest = hungry[0]
        if available[smallest] <= share:
            granted[smallest] = available[smallest]
            remaining -= available[smallest]
            hungry.pop(0)
            continue
        leftover = remaining - share * len(hungry)
        for index, tp in enumerate(sorted(hungry)):
            granted[tp] = share + (1 if index < leftover else 0)
        remaining = 0
    return granted


def limit_end_offsets(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int | None
) -> PartitionOffsets:
    """End offsets for a batch from ``start`` towards ``latest`` under an optional row budget.

    ``start`` must hold every partition of ``latest`` (new partitions at their log start
    offset). An end offset never goes below its start: a new leader may briefly report
    a lower high watermark than the one a previous batch already read up to.
    """
    bounded = {tp: max(start[tp], offset) for tp, offset in latest.items()}
    if max_rows is None:
        return bounded
    granted = fair_share({tp: bounded[tp] - start[tp] for tp in bounded}, max_rows)
    return {tp: start[tp] + granted[tp] for tp in bounded}


def spread_ranges(ranges: list[tuple[K, int, int]], min_partitions: int | None) -> list[tuple[K, int, int]]:
    """At least ``min_partitions`` non-empty ranges when there are fewer (Spark's ``minPartitions``,
    its ``KafkaOffsetRangeCalculator``): each range is cut into parts in proportion to its share of all
    the offsets (at least one part), the last part of each taking the remainder. Ranges already that
    many are kept as they are; so are the ranges when none holds an offset."""
    total = sum(end - start for _, start, end in ranges)
    if min_partitions is None or len(ranges) >= min_partitions or total == 0:
        return ranges
    spread: list[tuple[K, int, int]] = []
    for key, start, end in ranges:
        parts = max(round((end - start) / total * min_partitions), 1)
        remaining, piece_start = end - start, start
        for part in range(parts):
            size = remaining // (parts - part)
            remaining -= size
            if size:
                spread.append((key, piece_start, piece_start + size))
            piece_start += size
    return spread


def split_range(start_offset: int, end_offset: int, max_records: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into consecutive pieces of at most ``max_records`` offsets."""
    return [
        (piece_start, min(piece_start + max_records, end_offset))
        for piece_start in range(start_offset, end_offset, max_records)
    ]


def delays_batch(
    min_rows: int,
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    *,
    now_ms: int,
    last_trigger_ms: int | None,
    max_trigger_delay_ms: int,
) -> bool:
    """Whether a micro-batch waits for more records (``minOffsetsPerTrigger``), as Spark's Kafka source decides.

    A batch runs once ``min_rows`` new offsets are available across the partitions, or
    once ``max_trigger_delay_ms`` has passed since the last batch ran, whichever comes
    first; the first batch of a run never waits (``last_trigger_ms`` None). The caller
    notes ``now_ms`` as the last trigger whenever this answers False.
    """
    if last_trigger_ms is None or now_ms - last_trigger_ms >= max_trigger_delay_ms:
        return False
    new_rows = sum(max(0, end - start.get(tp, 0)) for tp, end in latest.items())
    return new_rows < min_rows
