"""One partition's batch of records on its way to the leader, and the size estimate it is cut by.

A batch is open while records are appended, sealed once it is full or drained, and
encoded into record batch v2 bytes when it is first sent. The bytes are kept for
retries: a retried batch is the same bytes (same producer id, epoch and base
sequence), which is what lets the broker recognise a duplicate. The bytes are built
again only when the producer's epoch is bumped (``stamp`` with a new identity).

``deliveries`` are opaque tokens, one per record in order; the producer passes
asyncio futures, the pure tests pass anything. This module never touches them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from broker.client.types import TopicPartition
from broker.record.codec import RecordInput, encode_batch
from broker.record.header import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    RECORD_BATCH_OVERHEAD,
)

RECORD_OVERHEAD_BYTES = 21
"""Upper bound of a record's framing: length (5) + attributes (1) + timestamp delta (10) + offset delta (5)."""
LENGTH_FIELD_BYTES = 5
"""Bytes of a varint length prefix, at most."""


def estimate_record_bytes(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]]) -> int:
    """An upper bound of the bytes ``key``/``value``/``headers`` take inside an uncompressed batch."""
    size = RECORD_OVERHEAD_BYTES + 2 * LENGTH_FIELD_BYTES + LENGTH_FIELD_BYTES
    size += len(key) if key is not None else 0
    size += len(value) if value is not None else 0
    for header_key, header_value in headers:
        size += 2 * LENGTH_FIELD_BYTES + len(header_key.encode("utf-8"))
        size += len(header_value) if header_value is not None else 0
    return size


@dataclass(eq=False, slots=True)
class ProducerBatch:
    """Records for one partition; ``order`` is its creation rank within the partition.

    Invariant: ``len(records) == len(deliveries)``; ``buffered_bytes`` is the sum of the
    records' estimates and is what the accumulator's ``buffer_memory`` accounts.
    """

    tp: TopicPartition
    order: int
    created_ms: int
    deadline_ms: int
    records: list[RecordInput] = field(default_factory=list)
    deliveries: list[Any] = field(default_factory=list)
    buffered_bytes: int = 0
    sealed: bool = False
    attempts: int = 0
    overtook: bool = False
    """Sent, last time, while an older batch of its partition was unanswered: it may reach the broker first."""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    encoded: bytes | None = None

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def estimated_size_bytes(self) -> int:
        return RECORD_BATCH_OVERHEAD + self.buffered_bytes

    def try_append(self, record: RecordInput, size_bytes: int, delivery: Any, batch_size: int) -> bool:
        """Append unless sealed or the batch would outgrow ``batch_size`` (a first record always fits)."""
        if self.sealed or (self.records and self.estimated_size_bytes + size_bytes > batch_size):
            return False
        self.records.append(record)
        self.deliveries.append(delivery)
        self.buffered_bytes += size_bytes
        return True

    def stamp(self, producer_id: int, producer_epoch: int, base_sequence: int, compression: int) -> None:
        """Fix the idempotence fields and encode the bytes every attempt will send."""
        self.sealed = True
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.encoded = encode_batch(
            self.records,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
        )
