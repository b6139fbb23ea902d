"""The pure read-side view: which records of fetched batches a reader gets, and next_offset."""

from __future__ import annotations

import struct

from broker.record.codec import RecordInput, encode_batch
from broker.record.header import ATTRIBUTES_OFFSET, CONTROL_MASK, CRC_OFFSET, crc32c, next_offset_after, stamp
from broker.server.json_records import ReadFormat
from broker.server.routes_records import read_format, records_to_json


def batch(base_offset: int, *values: bytes, control: bool = False) -> bytes:
    buf = bytearray(encode_batch([RecordInput(None, value, [], 1) for value in values]))
    stamp(buf, 0, base_offset, 0)
    if control:
        attributes = struct.unpack_from(">h", buf, ATTRIBUTES_OFFSET)[0] | CONTROL_MASK
        struct.pack_into(">h", buf, ATTRIBUTES_OFFSET, attributes)
        struct.pack_into(">I", buf, CRC_OFFSET, crc32c(bytes(buf[ATTRIBUTES_OFFSET:])))
    return bytes(buf)


def offsets(rendered: list[dict]) -> list[int]:
    return [record["offset"] for record in rendered]


def test_skips_records_before_offset_and_stops_at_max_records() -> None:
    data = batch(10, b"a", b"b", b"c") + batch(13, b"d")
    rendered, next_offset = records_to_json("t", 0, data, 11, 14, 2, ReadFormat.STRING)
    assert offsets(rendered) == [11, 12] and next_offset == 13


def test_never_returns_an_offset_at_or_above_the_high_watermark() -> None:
    data = batch(0, b"a", b"b", b"c")
    rendered, next_offset = records_to_json("t", 0, data, 0, 2, 100, ReadFormat.BINARY)
    assert offsets(rendered) == [0, 1] and next_offset == 2


def test_control_batches_are_hidden_but_passed_over() -> None:
    data = batch(0, b"a") + batch(1, b"marker", control=True) + batch(2, b"c")
    rendered, next_offset = records_to_json("t", 0, data, 0, 3, 100, ReadFormat.STRING)
    assert [r["value"]["data"] for r in rendered] == ["a", "c"] and next_offset == 3
    only_control, next_offset = records_to_json("t", 0, batch(5, b"m", control=True), 5, 6, 100, ReadFormat.STRING)
    assert only_control == [] and next_offset == 6


def test_empty_data_keeps_the_offset() -> None:
    assert records_to_json("t", 0, b"", 42, 42, 10, ReadFormat.JSON) == ([], 42)
    assert next_offset_after(b"", 42) == 42


def test_next_offset_after_is_after_the_last_batch() -> None:
    assert next_offset_after(batch(3, b"a", b"b") + batch(5, b"c"), 3) == 6


def test_read_format_defaults_to_binary_and_is_case_insensitive() -> None:
    assert read_format(None) is ReadFormat.BINARY
    assert read_format("STRING") is ReadFormat.STRING
