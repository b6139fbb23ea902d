"""Record batches straight into Arrow columns with numpy: no Python object per record.

The common page of a fetch is uncompressed batches of headerless records (what the
producers write when no record has a header). Their records are varint-framed, so
only finding where each record starts is sequential: runs of equal-sized records are
found at once (``_batch_record_starts``), the rest by a short loop over their lengths
(``broker.record.varint``'s, as the record decoder reads them). Every field after that is decoded for all records at once: a
varint is read at an array of positions by gathering the next bytes and masking at the
first byte without the continuation bit. Keys and values become Arrow ``binary_view``
arrays over the page itself (each view a length and either the bytes inline, up to 12,
or a position in the page), cast to ``binary`` by Arrow in one C++ pass.

``page_columns`` declines (``None``) whatever it does not recognise (a compressed or
control batch, a header, an offset delta that is not the record's index, a varint longer
than it reads, fields that do not add up to the record's length); the caller then
decodes the page record by record (``broker.record.decode``), which also reports a
corrupt batch. Invariant: when it answers, the record-by-record decoder gives the same
records.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from broker.errors import CorruptRecord
from broker.record.header import RECORDS_OFFSET, iter_batches
from broker.record.varint import SMALL_ZIGZAG, decode_varint

MAX_VARINT_BYTES = 9
"""Varints are read from at most this many bytes (63 bits: any timestamp delta of a real batch)."""
INLINE_VIEW_BYTES = 12
"""Arrow's binary_view keeps up to 12 bytes inside the view itself."""
MAX_RUNS = 8
"""Runs of equal-sized records looked for in one batch before walking the rest record by record."""
MIN_RUN = 4
"""A run shorter than this says the batch's records differ in size: the rest is walked record by record."""
MAX_VIEW_OFFSET = 2**31 - 1
"""A view points into its buffer with an int32."""


@dataclass(frozen=True, slots=True)
class PageColumns:
    offsets: np.ndarray
    timestamps_ms: np.ndarray
    keys: pa.Array
    values: pa.Array


class _Declined(Exception):
    """The page is not one this module decodes: the caller decodes it record by record."""


def page_columns(data: bytes) -> PageColumns | None:
    """Every record of ``data`` (whole, back-to-back batches) as columns; None to decode record by record."""
    try:
        return _columns(data)
    except _Declined:
        return None


def _columns(data: bytes) -> PageColumns:
    if len(data) > MAX_VIEW_OFFSET:
        raise _Declined("a page larger than a view can point into")
    page = np.frombuffer(data, dtype=np.uint8)
    starts, base_offsets, base_timestamps, indexes = _record_starts(data, page)
    length, size = _varints(page, starts)
    ends = starts + size + length
    timestamp_at = starts + size + 1
    timestamp_delta, size = _varints(page, timestamp_at)
    offset_at = timestamp_at + size
    offset_delta, size = _varints(page, offset_at)
    if not np.array_equal(offset_delta, indexes):
        raise _Declined("an offset delta is not its record's index")
    keys, value_at = _field(page, offset_at + size)
    values, headers_at = _field(page, value_at)
    if not np.array_equal(headers_at + 1, ends) or np.any(page[np.minimum(headers_at, len(page) - 1)] != 0):
        raise _Declined("a record has headers, or its fields do not add up to its length")
    return PageColumns(
        offsets=base_offsets + indexes,
        timestamps_ms=base_timestamps + timestamp_delta,
        keys=_views(data, page, *keys),
        values=_views(data, page, *values),
    )


def _record_starts(data: bytes, page: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each record's position in the page, with its batch's base offset and timestamp and its
    index in the batch. Declines a compressed or control batch, and one its records do not
    fill exactly. Every batch's CRC is checked (``CorruptRecord``), as a Kafka consumer does."""
    starts: list[np.ndarray] = []
    base_offsets: list[int] = []
    base_timestamps: list[int] = []
    counts: list[int] = []
    for header in iter_batches(data):
        if header.is_control or header.compression:
            raise _Declined("a compressed or control batch")
        end = header.position + header.size
        starts.append(_batch_record_starts(data, page, header.position + RECORDS_OFFSET, end, header.records_count))
        base_offsets.append(header.base_offset)
        base_timestamps.append(header.base_timestamp)
        counts.append(header.records_count)
    count_array = np.array(counts, dtype=np.int64)
    first_index = np.repeat(np.cumsum(count_array) - count_array, count_array)
    every_start = np.concatenate(starts) if starts else np.zeros(0, dtype=np.int64)
    return (
        every_start,
        np.repeat(np.array(base_offsets, dtype=np.int64), count_array),
        np.repeat(np.array(base_timestamps, dtype=np.int64), count_array),
        np.arange(len(every_start), dtype=np.int64) - first_index,
    )


def _batch_record_starts(data: bytes, page: np.ndarray, position: int, end: int, count: int) -> np.ndarray:
    """Where each of a batch's ``count`` records starts, the first at ``position``, the batch ending at ``end``.

    Records of one batch often have equal sizes, in a few runs (an offset delta's varint
    grows from one byte to two at index 64): each run is found at once, by guessing every
    later record the same size as the first and keeping the guesses up to the first whose
    length disagrees. After ``MAX_RUNS`` runs, or a run shorter than ``MIN_RUN``, the rest
    is walked record by record.
    """
    starts = np.empty(count, dtype=np.int64)
    found = 0
    for _ in range(MAX_RUNS):
        if found == count:
            break
        stride = _record_size(data, position, end)
        guesses = position + stride * np.arange(count - found)
        guesses = guesses[guesses < end]
        lengths, sizes = _varints(page, guesses, lenient=True)
        agree = lengths + sizes == stride
        run = len(guesses) if agree.all() else int(agree.argmin())
        starts[found : found + run] = guesses[:run]
        found += run
        position += stride * run
        if run < MIN_RUN:
            break
    for index in range(found, count):
        starts[index] = position
        position += _record_size(data, position, end)
    if position != end:
        raise _Declined("records that do not fill their batch")
    return starts


def _record_size(data: bytes, position: int, end: int) -> int:
    """A record's whole size: its length varint and what it counts (one or two bytes from ``SMALL_ZIGZAG``,
    longer ones through ``decode_varint``)."""
    if not position < end:
        raise _Declined("records past their batch")
    byte = data[position]
    if byte < 0x80:
        size = 1 + SMALL_ZIGZAG[byte]
    elif position + 1 < end and (second := data[position + 1]) < 0x80:
        size = 2 + SMALL_ZIGZAG[(byte & 0x7F) | (second << 7)]
    else:
        try:
            length, after = decode_varint(data, position)
        except CorruptRecord:
            raise _Declined("a record length that is not a varint") from None
        size = after - position + length
    if size < 2:
        raise _Declined("a record shorter than its attributes")
    return size


def _varints(page: np.ndarray, at: np.ndarray, *, lenient: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The zigzag varints at positions ``at`` and their sizes; declines one longer than MAX_VARINT_BYTES,
    unless ``lenient`` (guessed positions), which reads it as size 0, a size no record has.

    Most are one or two bytes (values below 8 192): those are read from two gathered bytes.
    """
    first = page[np.minimum(at, len(page) - 1)].astype(np.int64)
    second = page[np.minimum(at + 1, len(page) - 1)].astype(np.int64)
    one = first < 0x80
    two = ~one & (second < 0x80)
    if np.all(one | two):
        return _unzigzag(np.where(one, first, (first & 0x7F) | (second << 7))), np.where(one, 1, 2)
    window = np.minimum(at[:, None] + np.arange(MAX_VARINT_BYTES), len(page) - 1)
    raw = page[window].astype(np.int64)
    last = raw < 0x80
    ended = last.any(axis=1)
    if not lenient and not ended.all():
        raise _Declined("a varint longer than it reads")
    size = np.where(ended, last.argmax(axis=1) + 1, 0)
    used = np.arange(MAX_VARINT_BYTES) < size[:, None]
    return _unzigzag((((raw & 0x7F) << (7 * np.arange(MAX_VARINT_BYTES))) * used).sum(axis=1)), size


def _unzigzag(raw: np.ndarray) -> np.ndarray:
    return (raw >> 1) ^ -(raw & 1)


def _field(page: np.ndarray, at: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """A length-prefixed field (-1: null) at ``at``: ((its data positions, lengths), where the next field starts)."""
    length, size = _varints(page, at)
    if np.any(length < -1):
        raise _Declined("a negative length")
    data_at = at + size
    return (data_at, length), data_at + np.maximum(length, 0)


def _views(data: bytes, page: np.ndarray, at: np.ndarray, length: np.ndarray) -> pa.Array:
    """``binary`` values (``length`` -1: null) at positions ``at`` of ``data`` (``page`` its bytes
    as an array), through binary_view."""
    count = len(at)
    present = length >= 0
    if not present.any():
        return pa.nulls(count, pa.binary())
    views = np.zeros((count, 16), dtype=np.uint8)
    words = views.view(np.int32)
    words[:, 0] = np.maximum(length, 0)
    window = np.minimum(at[:, None] + np.arange(INLINE_VIEW_BYTES), len(page) - 1)
    inline = page[window] * (np.arange(INLINE_VIEW_BYTES) < length[:, None])
    views[:, 4:] = inline
    long = length > INLINE_VIEW_BYTES
    words[long, 2] = 0
    words[long, 3] = at[long]
    validity = None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little").tobytes())
    array = pa.Array.from_buffers(pa.binary_view(), count, [validity, pa.py_buffer(views), pa.py_buffer(data)])
    return array.cast(pa.binary())
