"""Transactional batches and markers for the storage tests, with the offsets a log would give them."""

from __future__ import annotations

import dataclasses

from broker.record.codec import RecordInput, encode_batch
from broker.record.control import TransactionMarker, decode_marker, encode_marker_batch
from broker.record.header import BatchHeader, read_header, stamp
from broker.storage.transactions import AbortedTransaction, PartitionTransactions

NOW_MS = 1_700_000_000_000


def data_batch(producer_id: int, count: int = 1, *, epoch: int = 0, sequence: int = 0, tag: str = "v") -> bytes:
    """``count`` records of a transactional producer (or of no producer: ``producer_id`` -1)."""
    records = [RecordInput(None, f"{tag}-{i}".encode(), (), NOW_MS) for i in range(count)]
    if producer_id < 0:
        return encode_batch(records)
    return encode_batch(
        records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, is_transactional=True
    )


def marker_batch(producer_id: int, *, committed: bool, epoch: int = 0, coordinator_epoch: int = 1) -> bytes:
    return encode_marker_batch(TransactionMarker(producer_id, epoch, committed, coordinator_epoch), NOW_MS)


def at(batch: bytes, base_offset: int) -> BatchHeader:
    """The batch's header as the log holds it at ``base_offset``."""
    return dataclasses.replace(read_header(batch), base_offset=base_offset)


def feed(
    transactions: PartitionTransactions,
    batch: bytes,
    base_offset: int,
    aborted: list[AbortedTransaction] | None = None,
) -> int:
    """Apply ``batch`` at ``base_offset`` as the log does (a control batch decoded); return the next offset.

    The transaction an ABORT closes goes to ``aborted``, as the log adds it to the segment's index.
    """
    header = at(batch, base_offset)
    closed = transactions.apply(header, decode_marker(batch, read_header(batch)) if header.is_control else None)
    if closed is not None and aborted is not None:
        aborted.append(closed)
    return header.next_offset


def laid_out(*batches: bytes, start: int = 0) -> tuple[bytes, list[int]]:
    """The batches back to back with the offsets a log gives them from ``start``; and each one's base offset."""
    buf = bytearray()
    bases = []
    offset = start
    for batch in batches:
        position = len(buf)
        buf += batch
        stamp(buf, position, offset, 0)
        bases.append(offset)
        offset = read_header(buf, position).next_offset
    return bytes(buf), bases
