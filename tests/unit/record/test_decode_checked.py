"""``decode_checked_batch`` (the consumer's decoder) reads exactly what the eager decoder reads.

Every batch here is decoded both ways, and the records compared field by field: plain
batches (the short loop) and every other shape (the general loop), compressed with each
codec, with one-, two- and three-byte varints, and corrupt batches, which must be refused
with the eager decoder's message.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import pytest
from kafka.record._crc32c import crc as independent_crc32c  # type: ignore[import-untyped]

from broker.errors import CorruptRecord
from broker.record.codec import LOG_APPEND_TIME, Record, encode_batch, encode_columns
from broker.record.compression import GZIP, LZ4, NONE, ZSTD
from broker.record.decode import _decode_headerless, decode_batch, decode_checked_batch, decode_columns
from broker.record.header import RECORDS_OFFSET, validate_batch
from broker.storage.compacted_batch import BatchSpan, encode_span

TS = 1_700_000_000_000
CODECS = [NONE, GZIP, LZ4, ZSTD]


def _checked(batch: bytes) -> list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    header = validate_batch(batch)
    columns = decode_checked_batch(memoryview(batch), header)
    return list(zip(columns.offsets, columns.timestamps, columns.keys, columns.values, columns.headers, strict=True))


def _eager(batch: bytes) -> list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    _, records = decode_batch(batch)
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


def _columns(batch: bytes) -> list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    """What the Spark source's decoder reads of ``batch``, laid out as ``_eager``'s records."""
    columns = decode_columns(batch)
    return list(zip(columns.offsets, columns.timestamps, columns.keys, columns.values, columns.headers, strict=True))


def _plain_section(batch: bytes) -> tuple[list[int], list[bytes | None]] | None:
    """What the short loop makes of an uncompressed batch; ``None`` when it hands the batch to the general loop."""
    header = validate_batch(batch)
    headerless = _decode_headerless(batch[RECORDS_OFFSET:], header)
    return None if headerless is None else (headerless[0], headerless[2])


def _stamp(batch: bytes, base_offset: int) -> bytes:
    """The batch as a leader stores it: base offset set (outside the CRC)."""
    return struct.pack(">q", base_offset) + batch[8:]


PLAIN: dict[str, tuple[list[bytes | None], list[int]]] = {
    "one-byte lengths": ([b"v%d" % i for i in range(10)], [TS + i for i in range(10)]),
    "100-byte values, 2-byte offset deltas": ([bytes(100)] * 300, [TS + i // 7 for i in range(300)]),
    "values of 64 to 8191 bytes (2-byte varints)": ([b"x" * n for n in (64, 65, 1000, 8191)], [TS] * 4),
    "values of 8192 bytes and more (3-byte varints)": ([b"y" * n for n in (8192, 9000, 70_000)], [TS] * 3),
    "null and empty values": ([None, b"", None, b"z"], [TS] * 4),
    "timestamps far from the base, before and after it": ([b"a", b"b", b"c"], [TS, TS - 10**9, TS + 10**11]),
    "more than 8192 records (3-byte offset deltas)": ([b"r"] * 8300, [TS] * 8300),
}


@pytest.mark.parametrize("compression", CODECS)
@pytest.mark.parametrize("case", sorted(PLAIN))
def test_plain_batches_decode_as_the_eager_decoder_reads_them(case: str, compression: int) -> None:
    values, timestamps = PLAIN[case]
    batch = _stamp(encode_columns(values, timestamps, compression=compression), 1_000)
    assert _checked(batch) == _eager(batch) == _columns(batch)
    assert [value for _, _, _, value, _ in _checked(batch)] == values
    if compression == NONE:
        assert _plain_section(batch) is not None, "the short loop must read plain batches"


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    batch = encode_batch([(None, b"a", (), TS), (None, b"b", (), TS + 5)], timestamp_type=LOG_APPEND_TIME)
    assert _plain_section(batch) is not None
    assert _checked(batch) == _eager(batch)
    assert [timestamp for _, timestamp, _, _, _ in _checked(batch)] == [TS + 5, TS + 5]


MIXED: dict[str, list[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]]] = {
    "keys": [(b"k1", b"v1", (), TS), (b"k2", b"v2", (), TS + 1)],
    "a key only on the last record": [(None, b"v1", (), TS), (b"k", b"v2", (), TS + 1)],
    "null key and empty key": [(None, b"v", (), TS), (b"", b"v", (), TS)],
    "headers": [(None, b"v", [("trace", b"1"), ("ünï", None)], TS), (None, b"w", (), TS)],
    "headers only on the last record": [(None, b"v", (), TS)] * 70 + [(None, b"w", [("h", b"")], TS)],
    "long keys and values": [(b"k" * 9000, b"v" * 100, (), TS), (None, None, (), TS)],
    "keys of 63 and 64 bytes (one- and two-byte lengths)": [(b"k" * 63, b"v", (), TS), (b"k" * 64, b"v", (), TS)],
}


@pytest.mark.parametrize("compression", CODECS)
@pytest.mark.parametrize("case", sorted(MIXED))
def test_batches_with_keys_or_headers_decode_as_the_eager_decoder_reads_them(case: str, compression: int) -> None:
    records = MIXED[case]
    batch = encode_batch(records, base_offset=50, compression=compression, partition_leader_epoch=4)
    assert _checked(batch) == _eager(batch) == _columns(batch)
    assert [key for _, _, key, _, _ in _checked(batch)] == [record[0] for record in records]
    if compression == NONE:
        with_headers = any(record[2] for record in records)
        assert (_plain_section(batch) is None) == with_headers, "only batches with headers take the general loop"


def test_a_compacted_batch_decodes_with_its_gaps() -> None:
    span = BatchSpan(10, 20, 3, 0, TS + 9, 7, 0, 0)
    batch = encode_span(span, [Record(12, TS + 2, None, b"a"), Record(19, TS + 9, None, b"b")])
    assert _plain_section(batch) is None, "offset deltas 2 and 9 are not the records' indexes"
    assert _checked(batch) == _eager(batch) == [(12, TS + 2, None, b"a", []), (19, TS + 9, None, b"b", [])]


def test_each_record_of_a_plain_batch_has_its_own_header_list_and_keeps_it() -> None:
    batch = encode_columns([b"a", b"b"], [TS, TS])
    columns = decode_checked_batch(batch, validate_batch(batch))
    headers = columns.headers
    assert headers == [[], []] and headers[0] is not headers[1]
    headers[0].append(("added", b"x"))
    assert columns.headers is headers and columns.headers[0] == [("added", b"x")]


NULL_KEY_RECORD = bytes.fromhex("12 00 00 00 01 06 61 62 63 00".replace(" ", ""))
"""length 9, attributes, timestamp delta 0, offset delta 0, null key, value b"abc", no headers."""


KEYED_RECORD = bytes.fromhex("10 00 00 00 02 6b 02 76 00".replace(" ", ""))
"""length 8, attributes, timestamp delta 0, offset delta 0, key b"k", value b"v", no headers."""


def _hand_built(section: bytes, records_count: int) -> bytes:
    covered = struct.pack(">hiqqqhii", 0, max(records_count - 1, 0), TS, TS, -1, -1, -1, records_count) + section
    return struct.pack(">qiibI", 0, 9 + len(covered), 0, 2, independent_crc32c(covered)) + covered


def _with_offset_delta(record: bytes, delta: int) -> bytes:
    return record[:3] + bytes([delta << 1]) + record[4:]


CORRUPT = {
    "fewer records than the count": (NULL_KEY_RECORD, 2, "declares 2 records but its records section holds only 1"),
    "bytes after the last counted record": (NULL_KEY_RECORD * 2, 1, "declares 1 records but 10 bytes follow"),
    "a record longer than its fields": (
        b"\x14" + NULL_KEY_RECORD[1:] + b"\x00",
        1,
        "declares 10 bytes but its fields take 9",
    ),
    "a record shorter than its fields": (b"\x10" + NULL_KEY_RECORD[1:], 1, "declares 8 bytes but its fields take 9"),
    "a value running past the section": (NULL_KEY_RECORD[:5] + b"\x7e" + NULL_KEY_RECORD[6:], 1, "runs past"),
    "a value length below -1": (NULL_KEY_RECORD[:5] + b"\x03" + NULL_KEY_RECORD[6:], 1, "value has length -2"),
    "a headers count that is negative": (NULL_KEY_RECORD[:-1] + b"\x01", 1, "has -1 headers"),
    "a key length below -1": (KEYED_RECORD[:4] + b"\x03" + KEYED_RECORD[5:], 1, "key has length -2"),
    "a key running past the section": (KEYED_RECORD[:4] + b"\x7e" + KEYED_RECORD[5:], 1, "runs past"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_plain_looking_records_are_refused_with_the_eager_decoders_reason(case: str) -> None:
    section, count, reason = CORRUPT[case]
    batch = _hand_built(section, count)
    with pytest.raises(CorruptRecord, match=reason) as eager:
        decode_batch(batch)
    with pytest.raises(CorruptRecord) as checked:
        decode_checked_batch(batch, validate_batch(batch))
    assert str(checked.value) == str(eager.value)


def test_a_hand_built_plain_batch_is_read_by_the_short_loop() -> None:
    """The corrupt cases above differ from this one only in the byte they break."""
    batch = _hand_built(NULL_KEY_RECORD + _with_offset_delta(NULL_KEY_RECORD, 1), 2)
    assert _plain_section(batch) == ([TS, TS], [b"abc", b"abc"])
    assert _checked(batch) == _eager(batch)


def test_a_hand_built_keyed_batch_is_read_by_the_short_loop() -> None:
    batch = _hand_built(KEYED_RECORD + _with_offset_delta(KEYED_RECORD, 1), 2)
    header = validate_batch(batch)
    assert _decode_headerless(batch[RECORDS_OFFSET:], header) == ([TS, TS], [b"k", b"k"], [b"v", b"v"])
    assert _checked(batch) == _eager(batch)


def test_offset_deltas_out_of_order_are_left_to_the_general_loop() -> None:
    batch = _hand_built(_with_offset_delta(NULL_KEY_RECORD, 1) + NULL_KEY_RECORD, 2)
    assert _plain_section(batch) is None
    assert _checked(batch) == _eager(batch) == [(1, TS, None, b"abc", []), (0, TS, None, b"abc", [])]


def test_decode_columns_reads_back_to_back_batches_of_both_shapes_in_order() -> None:
    """The Spark source's decoder: a headerless batch, one with headers, a compacted one, one more headerless."""
    span = BatchSpan(6, 9, 3, 0, TS + 9, 7, 0, 0)
    data = b"".join(
        (
            _stamp(encode_columns([b"a", None, b"c"], [TS, TS + 1, TS + 2]), 0),
            encode_batch([(b"k", b"d", [("h", b"1")], TS)] * 2, base_offset=3, compression=GZIP),
            encode_span(span, [Record(7, TS + 7, b"k", b"e")]),
            encode_batch([(b"k2", b"f", (), TS)], base_offset=10),
        )
    )
    columns = decode_columns(data)
    assert columns.offsets == [0, 1, 2, 3, 4, 7, 10]
    assert columns.values == [b"a", None, b"c", b"d", b"d", b"e", b"f"]
    assert columns.keys == [None, None, None, b"k", b"k", b"k", b"k2"]
    assert columns.headers == [[], [], [], [("h", b"1")], [("h", b"1")], [], []]
    assert columns.headers[0] is not columns.headers[1]
