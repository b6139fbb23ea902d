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


class AbortedFilter:
    """The rule above, fed one batch header at a time in offset order (a reader that walks batches itself)."""

    def __init__(self, aborted: Iterable[tuple[int, int]]) -> None:
        self._pending = [(first_offset, producer_id) for producer_id, first_offset in aborted]
        heapq.heapify(self._pending)
        self._aborting: set[int] = set()

    def keeps(self, header: BatchHeader) -> bool:
        """Whether the batch holds records for an application (never a control batch)."""
        pending = self._pending
        while pending and pending[0][0] <= header.last_offset:
            self._aborting.add(heapq.heappop(pending)[1])
        if header.is_control:
            if header.is_transactional:
                self._aborting.discard(header.producer_id)
            return False
        return not (header.is_transactional and header.producer_id in self._aborting)


def kept_batches(data: Buffer, aborted: Iterable[tuple[int, int]], *, check_crc: bool = False) -> Iterator[BatchHeader]:
    """The data batches of ``data`` a ``read_committed`` reader keeps; ``aborted`` is (producer id, first offset) pairs."""
    rule = AbortedFilter(aborted)
    return (header for header in iter_batches(data, check_crc=check_crc) if rule.keeps(header))


def committed_bytes(data: Buffer, aborted: Iterable[tuple[int, int]]) -> bytes:
    """The batches of ``data`` a ``read_committed`` reader keeps, back to back (for readers that decode bytes)."""
    view = memoryview(data)
    return b"".join(view[header.position : header.position + header.size] for header in kept_batches(data, aborted))


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
