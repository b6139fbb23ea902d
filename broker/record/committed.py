"""Which batches a ``read_committed`` reader keeps: Kafka's consumer-side filter, shared by every reader.

A ``read_committed`` answer ends at the last stable offset and lists the aborted
transactions that have records in it (producer id and first offset). Walking the
batches in offset order, as Kafka's ``CompletedFetch`` does: once a batch reaches an
aborted transaction's first offset, that producer's transactional batches are dropped
until its ABORT marker; control batches are never records for an application. A
producer may abort several transactions in one answer, so its first offsets are
consumed in order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from broker.record.codec import Buffer
from broker.record.header import BatchHeader, iter_batches


def kept_batches(data: Buffer, aborted: Iterable[tuple[int, int]], *, check_crc: bool = False) -> Iterator[BatchHeader]:
    """The data batches of ``data`` a ``read_committed`` reader keeps; ``aborted`` is (producer id, first offset) pairs."""
    pending = [(first_offset, producer_id) for producer_id, first_offset in aborted]
    heapq.heapify(pending)
    aborting: set[int] = set()
    for header in iter_batches(data, check_crc=check_crc):
        while pending and pending[0][0] <= header.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        if header.is_control:
            if header.is_transactional:
                aborting.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in aborting:
            continue
        yield header


def format_aborted(aborted: Iterable[tuple[int, int]]) -> str:
    """The ``X-Aborted-Transactions`` header of a binary ``read_committed`` answer: ``pid:first,pid:first``."""
    return ",".join(f"{producer_id}:{first_offset}" for producer_id, first_offset in aborted)


def parse_aborted(text: str | None) -> tuple[tuple[int, int], ...]:
    """The pairs ``format_aborted`` wrote; ``ValueError`` on anything else."""
    if not text:
        return ()
    pairs = []
    for item in text.split(","):
        producer_id, _, first_offset = item.partition(":")
        pairs.append((int(producer_id), int(first_offset)))
    return tuple(pairs)
