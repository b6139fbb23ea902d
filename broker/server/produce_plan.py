"""Where each produced record goes, and the record batches a request becomes.

Partition choice follows Kafka's producer: an explicit ``partition_id`` wins; a record
with a key goes to ``murmur2(key) % partitions`` (``broker.partitioner``), so it lands
where the Java client would put it; a record without a key goes round-robin, per topic,
across requests.

A partition's records become as few batches as its ``max.message.bytes`` allows, as
Kafka's producer closes a batch when the next record would overflow ``batch.size``:
records are taken in request order and a batch is closed when the next record would
push it over the limit. Sizes come from ``record_size_in_bytes`` before encoding, so a
batch is encoded once. A record too large for any batch gets a batch of its own, which
the size check then refuses: only that record fails, never its neighbours.

Invariants of ``build_batches``: every placed record is in exactly one batch; a
partition's batches, in list order, hold its records in request order; every batch
of more than one record encodes to at most ``max_batch_bytes``; a record's offset is
its batch's base offset plus its index in ``PartitionBatch.slots``.

Pure: no asyncio, no I/O.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import cast

from broker.errors import UnknownPartition
from broker.partitioner import partition_for_key
from broker.record.codec import encode_batch, record_size_in_bytes
from broker.record.header import RECORD_BATCH_OVERHEAD
from broker.server.json_records import EncodedRecord


class RoundRobin:
    """A counter per topic for records without key or partition."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count[int]] = {}

    def next_partition(self, topic: str, partition_count: int) -> int:
        counter = self._counters.setdefault(topic, itertools.count())
        return next(counter) % partition_count


def choose_partition(topic: str, encoded: EncodedRecord, partition_count: int, round_robin: RoundRobin) -> int:
    """The partition of one record; ``UnknownPartition`` for an explicit id out of range."""
    if encoded.partition_id is not None:
        if not 0 <= encoded.partition_id < partition_count:
            raise UnknownPartition(
                f"topic {topic!r} has partitions 0..{partition_count - 1}, not {encoded.partition_id}",
                topic_name=topic,
                partition_id=encoded.partition_id,
            )
        return encoded.partition_id
    key = encoded.record.key
    if key is not None:
        return partition_for_key(key, partition_count)
    return round_robin.next_partition(topic, partition_count)


@dataclass(frozen=True, slots=True)
class PlacedRecord:
    """A record of the request at position ``slot``, bound for ``partition``."""

    slot: int
    partition: int
    encoded: EncodedRecord


@dataclass(frozen=True, slots=True)
class PartitionBatch:
    partition: int
    slots: list[int]
    timestamps_ms: list[int]
    batch: bytes


def split_by_size(items: list[PlacedRecord], max_batch_bytes: int) -> list[list[PlacedRecord]]:
    """Consecutive runs of ``items`` (one partition's records, in order), each fitting ``max_batch_bytes``.

    A run is only ever closed because the next record does not fit, so no two
    neighbouring runs could have been one; a record that alone overflows is a run of one.
    Records carry their timestamp (``encode_record`` stamps "now"), which the size of a
    record's timestamp delta depends on.
    """
    runs: list[list[PlacedRecord]] = []
    current: list[PlacedRecord] = []
    batch_bytes = 0
    base_timestamp = 0
    for item in items:
        record = item.encoded.record
        timestamp = record.timestamp
        assert timestamp is not None
        if current:
            size = record_size_in_bytes(record, len(current), timestamp - base_timestamp)
            if batch_bytes + size <= max_batch_bytes:
                current.append(item)
                batch_bytes += size
                continue
            runs.append(current)
        current = [item]
        base_timestamp = timestamp
        batch_bytes = RECORD_BATCH_OVERHEAD + record_size_in_bytes(record, 0, 0)
    if current:
        runs.append(current)
    return runs


def build_batches(placed: list[PlacedRecord], max_batch_bytes: int) -> list[PartitionBatch]:
    """Uncompressed record batches v2 by partition, then in request order.

    Each fits ``max_batch_bytes``, except a batch of one record too large on its own.
    """
    by_partition: dict[int, list[PlacedRecord]] = defaultdict(list)
    for item in placed:
        by_partition[item.partition].append(item)
    batches = []
    for partition, items in sorted(by_partition.items()):
        for run in split_by_size(items, max_batch_bytes):
            records = [item.encoded.record for item in run]
            batches.append(
                PartitionBatch(
                    partition=partition,
                    slots=[item.slot for item in run],
                    # encode_record stamps every record (the client's time or now), so none is None.
                    timestamps_ms=cast("list[int]", [record.timestamp for record in records]),
                    batch=encode_batch(records),
                )
            )
    return batches
