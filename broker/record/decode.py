"""Reading Kafka's record batch v2 (magic 2): decoding records, and validating produced batches.

The record layout is in ``broker.record.codec`` (which encodes). Speed: every decoder
funnels through one loop (``_decode_records``) that inlines the one- and two-byte varint
cases and appends into column lists; ``Record`` objects are built from the columns in
one ``map`` only when asked for. Batches without headers (most batches) are read by a
shorter loop (``_decode_headerless``) in the columnar decoders (``decode_columns``, and
``decode_checked_batch`` for the consumer, which also trusts the CRC its caller
checked); it falls back to the general loop on anything else. Validating a produced
batch walks the same fields in a copy of that loop that keeps nothing
(``_walk_records``).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import repeat

from broker.errors import CorruptRecord
from broker.record.codec import Buffer, HeaderList, Record, RecordColumns
from broker.record.compression import NONE, decompress
from broker.record.header import RECORDS_OFFSET, TIMESTAMP_TYPE_MASK, BatchHeader, validate_batch
from broker.record.varint import SMALL_ZIGZAG, decode_varint, decode_varlong


def decode_batch(buf: Buffer, position: int = 0) -> tuple[BatchHeader, list[Record]]:
    """Validate (header and CRC) and decode the batch at ``position``; ``CorruptRecord`` if bad."""
    header = validate_batch(buf, position)
    columns = RecordColumns([], [], [], [], [])
    _decode_records(_records_section(buf, header), header, columns)
    records = list(map(Record, *columns, repeat(header.partition_leader_epoch)))
    return header, records


def iter_batches_with_records(buf: Buffer) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Decode whole, back-to-back batches one at a time; stops at the first bad one."""
    position = 0
    end = len(buf)
    while position < end:
        header, records = decode_batch(buf, position)
        yield header, records
        position += header.size


def iter_records(buf: Buffer) -> Iterator[Record]:
    """Every record of whole, back-to-back batches, in offset order."""
    for _, records in iter_batches_with_records(buf):
        yield from records


def decode_columns(buf: Buffer) -> RecordColumns:
    """All records of whole, back-to-back batches as parallel lists (the columnar fast path).

    Batches without headers are read by the short loop (``_decode_headerless``), the
    others by the general one; both give the same columns.
    """
    columns = RecordColumns([], [], [], [], [])
    position = 0
    end = len(buf)
    while position < end:
        header = validate_batch(buf, position)
        section = _records_section(buf, header)
        headerless = _decode_headerless(section, header)
        if headerless is None:
            _decode_records(section, header, columns)
        else:
            timestamps, keys, values = headerless
            count = len(values)
            columns.offsets.extend(range(header.base_offset, header.base_offset + count))
            columns.timestamps.extend(timestamps)
            columns.keys.extend(keys)
            columns.values.extend(values)
            columns.headers.extend([] for _ in range(count))
        position += header.size
    return columns


class BatchColumns:
    """One batch's records as columns, for a reader that hands them out one by one (the consumer).

    ``headers`` of a batch in which no record has a header is made on its first read, not
    at decode: an empty list per record would be, besides the reader's own per-record
    view, the only object per record the garbage collector tracks, and would double its
    work for a list most readers never look at. Each record still gets its own list, the
    same one on every read (two first reads at once in two threads may each make one;
    one of them is kept, as ``LazyBatch.decode`` keeps one of two concurrent decodes).
    """

    __slots__ = ("_headers", "keys", "offsets", "timestamps", "values")

    def __init__(
        self,
        offsets: list[int],
        timestamps: list[int],
        keys: list[bytes | None],
        values: list[bytes | None],
        headers: list[HeaderList] | None,
    ) -> None:
        self.offsets = offsets
        self.timestamps = timestamps
        self.keys = keys
        self.values = values
        self._headers = headers

    @property
    def headers(self) -> list[HeaderList]:
        headers = self._headers
        if headers is None:
            headers = self._headers = [[] for _ in self.offsets]
        return headers


def decode_checked_batch(batch: Buffer, header: BatchHeader) -> BatchColumns:
    """The records of one batch whose header and CRC the caller has checked (``validate_batch``).

    ``batch`` holds exactly the batch (its first byte is the batch's first byte); the CRC
    is not computed again. ``CorruptRecord`` if the records disagree with the header, as
    ``decode_columns`` raises it. A batch of records without headers (``_decode_headerless``)
    is read by the short loop; any other goes through the general one.
    """
    view = memoryview(batch)[RECORDS_OFFSET : header.size]
    codec = header.compression
    empty = not view and header.records_count == 0
    section = bytes(view) if codec == NONE or empty else decompress(codec, view)
    headerless = _decode_headerless(section, header)
    if headerless is None:
        columns = RecordColumns([], [], [], [], [])
        _decode_records(section, header, columns)
        return BatchColumns(*columns)
    timestamps, keys, values = headerless
    base_offset = header.base_offset
    return BatchColumns(list(range(base_offset, base_offset + len(values))), timestamps, keys, values, None)


def _decode_headerless(
    data: bytes, header: BatchHeader
) -> tuple[list[int], list[bytes | None], list[bytes | None]] | None:
    """Timestamps, keys and values of a records section of headerless records; ``None`` if one is not.

    Headerless: no headers and offset delta equal to the record's index: every record
    ``encode_columns`` and ``encode_batch`` write without headers, which is most records.
    For them the offsets and headers follow from the batch header, so this loop reads
    only the timestamp delta, the key and the value.

    It never decides a batch is corrupt: whatever it does not recognise (a header, a
    null key or a header count written in more bytes than needed, a negative length,
    fields that do not add up to the record's length, a section that ends early or late)
    makes it give up, and the caller runs the general loop, which decodes the batch or
    raises ``CorruptRecord`` with the reason.
    Invariant: when it returns columns, the general loop returns the same records.
    """
    small = SMALL_ZIGZAG
    timestamps: list[int] = []
    values: list[bytes | None] = []
    keys: list[bytes | None] = []
    add_timestamp, add_key, add_value = timestamps.append, keys.append, values.append
    base_timestamp = header.base_timestamp
    position = 0
    try:
        for index in range(header.records_count):
            byte = data[position]
            if byte < 0x80:
                record_end = position + 1 + small[byte]
                position += 2  # the length and the attributes byte
            elif (second := data[position + 1]) < 0x80:
                record_end = position + 2 + small[(byte & 0x7F) | (second << 7)]
                position += 3
            else:
                length, position = decode_varint(data, position)
                record_end = position + length
                position += 1
            byte = data[position]
            if byte < 0x80:
                add_timestamp(base_timestamp + small[byte])
                position += 1
            elif (second := data[position + 1]) < 0x80:
                add_timestamp(base_timestamp + small[(byte & 0x7F) | (second << 7)])
                position += 2
            else:
                timestamp_delta, position = decode_varlong(data, position)
                add_timestamp(base_timestamp + timestamp_delta)
            byte = data[position]
            if byte < 0x80:
                offset_delta = small[byte]
                position += 1
            elif (second := data[position + 1]) < 0x80:
                offset_delta = small[(byte & 0x7F) | (second << 7)]
                position += 2
            else:
                offset_delta, position = decode_varint(data, position)
            if offset_delta != index:
                return None
            byte = data[position]
            if byte == 1:  # a null key's length, -1, zigzagged
                add_key(None)
                position += 1
            else:
                if byte < 0x80 and not byte & 1:  # a length of 0 to 63, written in one byte
                    key_length = byte >> 1
                    position += 1
                else:
                    key_length, position = _read_length(data, position)
                add_key(data[position : position + key_length])
                position += key_length
            byte = data[position]
            if byte < 0x80:
                value_length = small[byte]
                position += 1
            elif (second := data[position + 1]) < 0x80:
                value_length = small[(byte & 0x7F) | (second << 7)]
                position += 2
            else:
                value_length, position = decode_varint(data, position)
            if value_length >= 0:
                add_value(data[position : position + value_length])
                position += value_length
            elif value_length == -1:
                add_value(None)
            else:
                return None
            if data[position] != 0 or position + 1 != record_end:  # 0: no headers
                return None
            position = record_end
    except (IndexError, CorruptRecord):
        return None
    if position != len(data):
        return None
    if header.attributes & TIMESTAMP_TYPE_MASK:
        timestamps = [header.max_timestamp] * len(values)
    return timestamps, keys, values


def _read_length(data: bytes, position: int) -> tuple[int, int]:
    """A non-negative length varint at ``position`` and the position after it; ``CorruptRecord`` if negative."""
    length, position = decode_varint(data, position)
    if length < 0:
        raise CorruptRecord("a negative length where the short loop expects a key")
    return length, position


def validate_produced_batches(buf: Buffer) -> tuple[BatchHeader, ...]:
    """Kafka's ``LogValidator`` for batches a client sends: each batch whole, its counts agree, every record parses.

    The CRC only proves the bytes are the ones the client computed it over; a client
    whose encoder is wrong (or a hostile one) can checksum a header whose counts
    disagree or records that do not parse. Appended, such a batch would make every
    later JSON read of the partition fail, so it is refused (400) as Kafka refuses it
    (``InvalidRecordException``). Record offset deltas must be exactly 0..n-1: readers
    split such a batch at any offset from its header alone (``broker.record.lazy``).
    Batches the broker encodes itself, and replicated ones, are not walked again.

    Returns the headers it checked (CRC included), so the caller need not parse them again.
    Invariant: accepts exactly the batches ``decode_batch`` accepts whose header counts
    and offset deltas follow the rule above; it only walks the records (``_walk_records``).
    """
    headers: list[BatchHeader] = []
    position = 0
    end = len(buf)
    while position < end:
        header = validate_batch(buf, position)
        if header.records_count < 1 or header.last_offset_delta != header.records_count - 1:
            raise CorruptRecord(
                f"record batch at byte {position} declares {header.records_count} records and a last offset "
                f"delta of {header.last_offset_delta}; a produced batch has n >= 1 records and delta n - 1"
            )
        data = _records_section(buf, header)
        try:
            end_position = _walk_records(data, header)
        except IndexError:
            raise CorruptRecord(
                f"record batch at byte {header.position}: a record runs past the end of the records section"
            ) from None
        _check_section_end(data, end_position, header)
        headers.append(header)
        position += header.size
    return tuple(headers)


def _records_section(buf: Buffer, header: BatchHeader) -> bytes:
    """The batch's records, decompressed: one contiguous ``bytes`` the decode loop can index."""
    start = header.position + RECORDS_OFFSET
    section = bytes(memoryview(buf)[start : header.position + header.size])
    codec = header.compression
    if codec == NONE or (not section and header.records_count == 0):
        return section
    return decompress(codec, section)


def _decode_records(data: bytes, header: BatchHeader, columns: RecordColumns) -> None:
    """Append the records in ``data`` to ``columns``; ``CorruptRecord`` if they disagree with the header."""
    try:
        end_position = _decode_records_unchecked(data, header, columns)
    except IndexError:
        raise CorruptRecord(
            f"record batch at byte {header.position}: a record runs past the end of the records section"
        ) from None
    _check_section_end(data, end_position, header)


def _check_section_end(data: bytes, end_position: int, header: BatchHeader) -> None:
    """The last record must end exactly where the records section does."""
    if end_position > len(data):
        raise CorruptRecord(
            f"record batch at byte {header.position}: the last record runs past the end of the records section"
        )
    if end_position < len(data):
        raise CorruptRecord(
            f"record batch at byte {header.position} declares {header.records_count} records "
            f"but {len(data) - end_position} bytes follow the last of them"
        )


def _decode_records_unchecked(data: bytes, header: BatchHeader, columns: RecordColumns) -> int:
    """The hot loop; returns the position after the last record.

    Varints of one or two bytes (every delta below 8192, every length below 8192) are
    read inline through a lookup table; longer ones go through ``broker.record.varint``.
    A function call per field would double the cost, which is why this loop is long.
    Reading past ``data`` raises ``IndexError``, which the caller reports.
    """
    add_offset, add_timestamp = columns.offsets.append, columns.timestamps.append
    add_key, add_value, add_headers = columns.keys.append, columns.values.append, columns.headers.append
    small = SMALL_ZIGZAG
    end = len(data)
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None
    position = 0
    for index in range(header.records_count):
        if position >= end:
            raise CorruptRecord(
                f"record batch at byte {header.position} declares {header.records_count} records "
                f"but its records section holds only {index}"
            )
        byte = data[position]
        if byte < 0x80:
            length, position = small[byte], position + 1
        elif data[position + 1] < 0x80:
            length, position = small[(byte & 0x7F) | (data[position + 1] << 7)], position + 2
        else:
            length, position = decode_varint(data, position)
        record_start = position
        position += 1  # the attributes byte, unused in magic 2
        byte = data[position]
        if byte < 0x80:
            timestamp_delta, position = small[byte], position + 1
        elif data[position + 1] < 0x80:
            timestamp_delta, position = small[(byte & 0x7F) | (data[position + 1] << 7)], position + 2
        else:
            timestamp_delta, position = decode_varlong(data, position)
        byte = data[position]
        if byte < 0x80:
            offset_delta, position = small[byte], position + 1
        elif data[position + 1] < 0x80:
            offset_delta, position = small[(byte & 0x7F) | (data[position + 1] << 7)], position + 2
        else:
            offset_delta, position = decode_varint(data, position)
        byte = data[position]
        if byte < 0x80:
            key_length, position = small[byte], position + 1
        elif data[position + 1] < 0x80:
            key_length, position = small[(byte & 0x7F) | (data[position + 1] << 7)], position + 2
        else:
            key_length, position = decode_varint(data, position)
        if key_length >= 0:
            add_key(data[position : position + key_length])
            position += key_length
        else:
            _check_null_length(key_length, "key", header)
            add_key(None)
        byte = data[position]
        if byte < 0x80:
            value_length, position = small[byte], position + 1
        elif data[position + 1] < 0x80:
            value_length, position = small[(byte & 0x7F) | (data[position + 1] << 7)], position + 2
        else:
            value_length, position = decode_varint(data, position)
        if value_length >= 0:
            add_value(data[position : position + value_length])
            position += value_length
        else:
            _check_null_length(value_length, "value", header)
            add_value(None)
        if data[position] == 0:
            add_headers([])
            position += 1
        else:
            headers, position = _decode_headers(data, position, header)
            add_headers(headers)
        if position - record_start != length:
            raise CorruptRecord(
                f"record batch at byte {header.position}: record {index} declares {length} bytes "
                f"but its fields take {position - record_start}"
            )
        add_offset(base_offset + offset_delta)
        add_timestamp(base_timestamp + timestamp_delta if log_append_time is None else log_append_time)
    return position


def _check_null_length(length: int, what: str, header: BatchHeader) -> None:
    """A length of -1 means null; anything more negative is corruption."""
    if length != -1:
        raise CorruptRecord(f"record batch at byte {header.position}: a record {what} has length {length}")


def _decode_headers(data: bytes, position: int, header: BatchHeader) -> tuple[HeaderList, int]:
    count, position = decode_varint(data, position)
    if count < 0:
        raise CorruptRecord(f"record batch at byte {header.position}: a record has {count} headers")
    headers: HeaderList = []
    for _ in range(count):
        key_length, position = decode_varint(data, position)
        if key_length < 0:
            raise CorruptRecord(f"record batch at byte {header.position}: a header key has length {key_length}")
        key_end = position + key_length
        if key_end > len(data):
            raise IndexError(key_end)
        try:
            header_key = data[position:key_end].decode("utf-8")
        except UnicodeDecodeError as error:
            raise CorruptRecord(f"record batch at byte {header.position}: a header key is not UTF-8") from error
        value_length, position = decode_varint(data, key_end)
        if value_length >= 0:
            headers.append((header_key, data[position : position + value_length]))
            position += value_length
        else:
            _check_null_length(value_length, "header value", header)
            headers.append((header_key, None))
    return headers, position


def _walk_records(data: bytes, header: BatchHeader) -> int:
    """``_decode_records_unchecked``'s checks without its output; returns the position after the last record.

    Validation of a produced batch keeps nothing, so this loop builds nothing per record:
    keys and values are stepped over, not sliced; timestamps are stepped over (a varlong
    of more than 10 bytes is still refused); the offset delta is compared with the record's
    index as it is read. Reading past ``data`` raises ``IndexError``, which the caller reports.
    """
    small = SMALL_ZIGZAG
    end = len(data)
    position = 0
    for index in range(header.records_count):
        if position >= end:
            raise CorruptRecord(
                f"record batch at byte {header.position} declares {header.records_count} records "
                f"but its records section holds only {index}"
            )
        byte = data[position]
        if byte < 0x80:
            length, position = small[byte], position + 1
        elif (second := data[position + 1]) < 0x80:
            length, position = small[(byte & 0x7F) | (second << 7)], position + 2
        else:
            length, position = decode_varint(data, position)
        record_start = position
        position += 1  # the attributes byte, unused in magic 2
        if data[position] < 0x80:
            position += 1
        elif data[position + 1] < 0x80:
            position += 2
        else:
            position = decode_varlong(data, position)[1]
        byte = data[position]
        if byte < 0x80:
            offset_delta, position = small[byte], position + 1
        elif (second := data[position + 1]) < 0x80:
            offset_delta, position = small[(byte & 0x7F) | (second << 7)], position + 2
        else:
            offset_delta, position = decode_varint(data, position)
        if offset_delta != index:
            raise CorruptRecord(
                f"record batch at byte {header.position}: its records' offset deltas are not 0, 1, ... "
                f"{header.records_count - 1} in order, as every producer writes them"
            )
        byte = data[position]
        if byte < 0x80:
            key_length, position = small[byte], position + 1
        elif (second := data[position + 1]) < 0x80:
            key_length, position = small[(byte & 0x7F) | (second << 7)], position + 2
        else:
            key_length, position = decode_varint(data, position)
        if key_length >= 0:
            position += key_length
        else:
            _check_null_length(key_length, "key", header)
        byte = data[position]
        if byte < 0x80:
            value_length, position = small[byte], position + 1
        elif (second := data[position + 1]) < 0x80:
            value_length, position = small[(byte & 0x7F) | (second << 7)], position + 2
        else:
            value_length, position = decode_varint(data, position)
        if value_length >= 0:
            position += value_length
        else:
            _check_null_length(value_length, "value", header)
        if data[position] == 0:
            position += 1
        else:
            position = _skip_headers(data, position, header)
        if position - record_start != length:
            raise CorruptRecord(
                f"record batch at byte {header.position}: record {index} declares {length} bytes "
                f"but its fields take {position - record_start}"
            )
    return position


def _skip_headers(data: bytes, position: int, header: BatchHeader) -> int:
    """``_decode_headers``'s checks, keeping nothing: keys are decoded as UTF-8 from a view and dropped."""
    count, position = decode_varint(data, position)
    if count < 0:
        raise CorruptRecord(f"record batch at byte {header.position}: a record has {count} headers")
    view = memoryview(data)
    for _ in range(count):
        key_length, position = decode_varint(data, position)
        if key_length < 0:
            raise CorruptRecord(f"record batch at byte {header.position}: a header key has length {key_length}")
        key_end = position + key_length
        if key_end > len(data):
            raise IndexError(key_end)
        try:
            str(view[position:key_end], "utf-8")
        except UnicodeDecodeError as error:
            raise CorruptRecord(f"record batch at byte {header.position}: a header key is not UTF-8") from error
        value_length, position = decode_varint(data, key_end)
        if value_length >= 0:
            position += value_length
        else:
            _check_null_length(value_length, "header value", header)
    return position
