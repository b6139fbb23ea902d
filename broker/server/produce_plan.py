"""Where each produced record goes, and the one batch per partition a request becomes.

Partition choice follows Kafka's producer: an explicit ``partition_id`` wins; a record
with a key goes to ``murmur2(key) % partitions`` (``broker.partitioner``), so it lands
where the Java client would put it; a record without a key goes round-robin, per topic,
across requests.

Invariant of ``build_batches``: every placed record is in exactly one batch, records
keep their request order inside their partition's batch, and a record's offset is its
batch's base offset plus its index in ``PartitionBatch.slots``.

Pure: no asyncio, no I/O.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import cast

from broker.errors import UnknownPartition
from broker.partitioner import partition_for_key
from broker.record.codec import encode_batch
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


def build_batches(placed: list[PlacedRecord]) -> list[PartitionBatch]:
    """One uncompressed record batch v2 per partition, records in request order."""
    by_partition: dict[int, list[PlacedRecord]] = defaultdict(list)
    for item in placed:
        by_partition[item.partition].append(item)
    batches = []
    for partition, items in sorted(by_partition.items()):
        records = [item.encoded.record for item in items]
        batches.append(
            PartitionBatch(
                partition=partition,
                slots=[item.slot for item in items],
                # encode_record stamps every record (the client's time or now), so none is None.
                timestamps_ms=cast("list[int]", [record.timestamp for record in records]),
                batch=encode_batch(records),
            )
        )
    return batches
