"""Batches read in place and decoded only when a record's field is read. Pure.

A reader that hands records out (the consumer) needs, per batch, only what the
61-byte header says: where the batch ends, its offsets, its leader epoch, whether it is
a control batch. ``checked_batch`` reads a batch of a fetch answer that way, checking
its CRC-32C over the whole batch, and keeps a ``memoryview`` of it (no copy). The
records themselves are decoded column-wise, in one pass, by ``LazyBatch.decode`` the
first time anything asks for a field; a batch nobody reads a field of is never decoded.
The decode trusts the CRC ``checked_batch`` checked (``decode_checked_batch``): it is
computed once per batch.

Invariant relied on (Kafka's; the producer and the log cleaner write batches so): the record
offsets of a batch strictly increase and lie in ``[base_offset, base_offset + last_offset_delta]``.
So a batch that starts at or after an offset and ends below another holds only
records between the two, and in a *dense* batch (``records_count == last_offset_delta
+ 1``: every batch a producer writes; only compaction leaves gaps) record ``i`` has
offset ``base_offset + i``: both known without decoding. ``decode`` checks the
invariant and raises ``CorruptRecord`` for a batch that breaks it, so a record read
never disagrees with the offsets it was handed out under.
"""

from __future__ import annotations

from itertools import islice
from operator import lt

from broker.errors import CorruptRecord
from broker.record.decode import BatchColumns, decode_checked_batch
from broker.record.header import BatchHeader, validate_batch


class LazyBatch:
    """One CRC-checked batch (``view`` holds exactly it); ``columns`` is ``None`` until ``decode`` ran, then its records.

    ``decode`` raises ``CorruptRecord`` if the records do not match the header (a
    batch whose CRC is right but whose records a broken encoder wrote).
    """

    __slots__ = ("_view", "columns", "header")

    def __init__(
        self, view: memoryview | None, header: BatchHeader | None, columns: BatchColumns | None = None
    ) -> None:
        self.header = header
        self._view = view
        self.columns = columns

    @property
    def first_offset(self) -> int:
        assert self.header is not None
        return self.header.base_offset

    @property
    def last_offset(self) -> int:
        assert self.header is not None
        return self.header.base_offset + self.header.last_offset_delta

    @property
    def records_count(self) -> int:
        assert self.header is not None
        return self.header.records_count

    @property
    def dense(self) -> bool:
        """Record ``i`` has offset ``first_offset + i`` (no compacted gaps)."""
        assert self.header is not None
        return self.header.records_count == self.header.last_offset_delta + 1

    def decode(self) -> BatchColumns:
        """The batch's records as columns, decoded on the first call; the bytes are let go of then.

        Records may be read from several threads (``SyncConsumer``'s callers): two first
        reads at once both decode, and either result is kept; ``columns`` is set before
        the bytes are dropped, so a reader that finds no bytes finds the columns.
        """
        columns = self.columns
        if columns is not None:
            return columns
        view = self._view
        if view is None:
            columns = self.columns
            assert columns is not None
            return columns
        assert self.header is not None
        columns = decode_checked_batch(view, self.header)
        self._check_offsets(columns.offsets)
        self.columns = columns
        self._view = None
        return columns

    def _check_offsets(self, offsets: list[int]) -> None:
        first, last = self.first_offset, self.last_offset
        if self.dense:
            ordered = offsets == list(range(first, last + 1))
        else:
            ordered = first <= offsets[0] and offsets[-1] <= last and all(map(lt, offsets, islice(offsets, 1, None)))
        if not ordered:
            raise CorruptRecord(
                f"record batch with base offset {first} holds record offsets that do not increase "
                f"within [{first}, {last}]"
            )


def checked_batch(view: memoryview, position: int) -> tuple[BatchHeader, memoryview]:
    """The header and bytes of the whole batch at ``position``; ``CorruptRecord`` if its header or CRC is bad.

    The CRC-32C is checked over the whole batch; the records are not decoded. The
    returned view shares ``view``'s memory (no copy).
    """
    header = validate_batch(view, position)
    return header, view[position : position + header.size]
