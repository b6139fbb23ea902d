"""Batches read in place and decoded only when a record's field is read. Pure.

A reader that hands records out (the consumer) needs, per batch, only what the
61-byte header says: where the batch ends, its offsets, its leader epoch, whether it is
a control batch. ``checked_batch`` reads a batch of a fetch answer that way, checking
its CRC-32C over the whole batch, and keeps a ``memoryview`` of it (no copy). The
records themselves are decoded column-wise, in one pass, by ``LazyBatch.decode`` the
first time anything asks for a field; a batch nobody reads a field of is never decoded.

Invariant relied on (Kafka's; the producer and the log cleaner write batches so): the record
offsets of a batch increase and lie in ``[base_offset, base_offset + last_offset_delta]``,
so a batch that starts at or after an offset and ends below another holds only
records between the two, known without decoding it.
"""

from __future__ import annotations

from broker.record.codec import RecordColumns, decode_columns
from broker.record.header import BatchHeader, validate_batch


class LazyBatch:
    """One CRC-checked batch; ``columns`` is ``None`` until ``decode`` ran, then the batch's records.

    ``decode`` raises ``CorruptRecord`` if the records do not match the header (a
    batch whose CRC is right but whose records a broken encoder wrote).
    """

    __slots__ = ("_view", "columns", "header")

    def __init__(
        self, view: memoryview | None, header: BatchHeader | None, columns: RecordColumns | None = None
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

    def decode(self) -> RecordColumns:
        """The batch's records as columns, decoded on the first call; the bytes are let go of then."""
        columns = self.columns
        if columns is None:
            assert self._view is not None
            columns = self.columns = decode_columns(self._view)
            self._view = None
        return columns


def checked_batch(view: memoryview, position: int) -> tuple[BatchHeader, memoryview]:
    """The header and bytes of the whole batch at ``position``; ``CorruptRecord`` if its header or CRC is bad.

    The CRC-32C is checked over the whole batch; the records are not decoded. The
    returned view shares ``view``'s memory (no copy).
    """
    header = validate_batch(view, position)
    return header, view[position : position + header.size]
