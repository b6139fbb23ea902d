"""Batches read in place and decoded only when a record's field is read. Pure.

A reader that hands records out (the consumer) needs, per batch, only what the
61-byte header says: where the batch ends, its offsets, its leader epoch, whether it is
a control batch. ``iter_lazy_batches`` walks a fetch answer that way, checking each
batch's CRC-32C over the whole batch as it goes, and keeps a ``memoryview`` of the
batch (no copy). The records themselves are decoded column-wise, in one pass, by
``LazyBatch.decode`` the first time anything asks for a field; a batch nobody reads a
field of is never decoded.

Invariant relied on (Kafka's, and every batch the broker appends keeps it): the record
offsets of a batch increase and lie in ``[base_offset, base_offset + last_offset_delta]``,
so a batch that starts at or after an offset and ends below another holds only
records between the two, known without decoding it.
"""

from __future__ import annotations

from collections.abc import Iterator

from broker.record.codec import Buffer, RecordColumns, decode_columns
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


def iter_lazy_batches(buf: Buffer) -> Iterator[tuple[BatchHeader, memoryview]]:
    """``(header, view)`` of each of the whole, back-to-back batches of ``buf``; ``CorruptRecord`` at a bad one.

    Every batch's header and CRC are checked before it is yielded; its records are not
    decoded.
    """
    view = memoryview(buf)
    end = len(view)
    position = 0
    while position < end:
        header = validate_batch(view, position)
        after = position + header.size
        yield header, view[position:after]
        position = after
