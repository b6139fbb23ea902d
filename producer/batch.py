"""One partition's batch of records on its way to the leader, and the size estimate it is cut by.

A batch is open while records are appended, sealed once it is full or drained, and
encoded into record batch v2 bytes when it is first sent. The bytes are kept for
retries: a retried batch is the same bytes (same producer id, epoch and base
sequence), which is what lets the broker recognise a duplicate. The bytes are built
again only when the producer's epoch is bumped (``stamp`` with a new identity).

``deliveries`` are opaque tokens, each covering a run of records in order; the
producer passes asyncio futures and bulk-send chunks, the pure tests pass anything.
This module never touches them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from broker.client.types import TopicPartition
from broker.record.codec import encode_columns
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


def estimate_record_bytes(key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]]) -> int:
    """An upper bound of the bytes ``key``/``value``/``headers`` take inside an uncompressed batch."""
    size = RECORD_OVERHEAD_BYTES + 2 * LENGTH_FIELD_BYTES + LENGTH_FIELD_BYTES
    size += len(key) if key is not None else 0
    size += len(value) if value is not None else 0
    for header_key, header_value in headers:
        size += 2 * LENGTH_FIELD_BYTES + len(header_key.encode("utf-8"))
        size += len(header_value) if header_value is not None else 0
    return size


def record_estimates(
    values: Sequence[bytes | None],
    keys: Sequence[bytes | None] | None,
    headers: Sequence[Sequence[tuple[str, bytes | None]]] | None,
) -> list[int]:
    """``estimate_record_bytes`` of every record of a bulk send, computed column by column."""
    fixed = RECORD_OVERHEAD_BYTES + 3 * LENGTH_FIELD_BYTES
    sizes = [fixed if value is None else fixed + len(value) for value in values]
    if keys is not None:
        sizes = [size if key is None else size + len(key) for size, key in zip(sizes, keys, strict=True)]
    if headers is not None:
        sizes = [
            size + estimate_record_bytes(None, None, list(record_headers)) - fixed if record_headers else size
            for size, record_headers in zip(sizes, headers, strict=True)
        ]
    return sizes


@dataclass(eq=False, slots=True)
class ProducerBatch:
    """Records for one partition, as columns; ``order`` is its creation rank within the partition.

    ``records`` holds each record's value (the one column every record has);
    ``timestamps`` its create time; ``keys`` and ``headers`` stay ``None`` until a record
    with a key (headers) joins, then hold one entry per record. No object is built per
    record: a bulk send extends the columns with slices.

    ``deliveries[i]`` is a token covering the next ``delivery_counts[i]`` records (one
    per ``send``, one per chunk of a bulk send; consecutive ``None`` tokens, records
    nobody waits for, share one entry). ``buffered_bytes`` is the sum of the records'
    estimates and is what the accumulator's ``buffer_memory`` accounts.
    """

    tp: TopicPartition
    order: int
    created_ms: int
    deadline_ms: int
    records: list[bytes | None] = field(default_factory=list)
    timestamps: list[int] = field(default_factory=list)
    keys: list[bytes | None] | None = None
    headers: list[Sequence[tuple[str, bytes | None]]] | None = None
    deliveries: list[Any] = field(default_factory=list)
    delivery_counts: list[int] = field(default_factory=list)
    buffered_bytes: int = 0
    sealed: bool = False
    attempts: int = 0
    overtook: bool = False
    """Sent, last time, while an older batch of its partition was unanswered: it may reach the broker first."""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    encoded: bytes | None = None
    finished: bool = False
    """Acknowledged or failed for good (set by the accumulator's ``deallocate``)."""

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def estimated_size_bytes(self) -> int:
        return RECORD_BATCH_OVERHEAD + self.buffered_bytes

    def append(
        self,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[tuple[str, bytes | None]] | None,
        timestamp: int,
        size_bytes: int,
        delivery: Any,
    ) -> None:
        """Add one record (the caller checked that it fits ``batch_size`` and the batch is not sealed)."""
        if key is not None or self.keys is not None:
            if self.keys is None:
                self.keys = [None] * len(self.records)
            self.keys.append(key)
        if headers or self.headers is not None:
            if self.headers is None:
                self.headers = [()] * len(self.records)
            self.headers.append(headers or ())
        self.records.append(value)
        self.timestamps.append(timestamp)
        self.buffered_bytes += size_bytes
        deliveries = self.deliveries
        if delivery is None and deliveries and deliveries[-1] is None:
            self.delivery_counts[-1] += 1
        else:
            deliveries.append(delivery)
            self.delivery_counts.append(1)

    def extend(
        self,
        values: Sequence[bytes | None],
        timestamp: int,
        keys: Sequence[bytes | None] | None,
        headers: Sequence[Sequence[tuple[str, bytes | None]]] | None,
        size_bytes: int,
        delivery: Any,
    ) -> None:
        """Add ``values`` (with their ``keys``/``headers`` when given) as consecutive records of one ``delivery``."""
        count = len(values)
        if keys is not None and self.keys is None:
            self.keys = [None] * len(self.records)
        if self.keys is not None:
            self.keys.extend(keys if keys is not None else repeat(None, count))
        if headers is not None and self.headers is None:
            self.headers = [()] * len(self.records)
        if self.headers is not None:
            self.headers.extend(headers if headers is not None else repeat((), count))
        self.records.extend(values)
        self.timestamps.extend(repeat(timestamp, count))
        self.buffered_bytes += size_bytes
        self._add_delivery(delivery, count)

    def _add_delivery(self, delivery: Any, count: int) -> None:
        if delivery is None and self.deliveries and self.deliveries[-1] is None:
            self.delivery_counts[-1] += count
        else:
            self.deliveries.append(delivery)
            self.delivery_counts.append(count)

    def stamp(
        self, producer_id: int, producer_epoch: int, base_sequence: int, compression: int, transactional: bool = False
    ) -> None:
        """Fix the idempotence fields (and the transactional flag) and encode the bytes every attempt will send."""
        self.sealed = True
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.encoded = encode_columns(
            self.records,
            self.timestamps,
            keys=self.keys,
            headers=self.headers,
            compression=compression,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=transactional,
        )
