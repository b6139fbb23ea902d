"""Raw record batches -> Arrow in the source schema: trimming, control batches, exact types."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.errors import CorruptRecord
from broker.record.codec import LOG_APPEND_TIME, encode_batch
from broker.record.compression import GZIP
from broker.record.decode import decode_columns
from broker.record.header import ATTRIBUTES_OFFSET, CONTROL_MASK, CRC_OFFSET, crc32c
from spark_connector.arrow import arrow_schema, records_to_arrow
from spark_connector.columnar import page_columns


def control_batch(base_offset: int) -> bytes:
    """A one-record batch marked as control (a transaction marker), with a correct CRC."""
    batch = bytearray(encode_batch([(b"\x00\x00\x00\x01", b"marker")], base_offset=base_offset, is_transactional=True))
    attributes = struct.unpack_from(">h", batch, ATTRIBUTES_OFFSET)[0] | CONTROL_MASK
    struct.pack_into(">h", batch, ATTRIBUTES_OFFSET, attributes)
    struct.pack_into(">I", batch, CRC_OFFSET, crc32c(bytes(batch[ATTRIBUTES_OFFSET:])))
    return bytes(batch)


def test_only_the_planned_range_of_user_records_comes_back_with_exact_types():
    first = encode_batch([(b"k%d" % i, b"v%d" % i, [("h", b"x%d" % i)], 1_700_000_000_000 + i) for i in range(5)])
    second = encode_batch(
        [(None, b"w%d" % i, [], 1_700_000_000_100) for i in range(4)], base_offset=6, timestamp_type=LOG_APPEND_TIME
    )
    data = first + control_batch(5) + second
    batch = records_to_arrow(data, "orders", 3, 2, 8, include_headers=True)
    assert batch is not None
    assert batch.schema == arrow_schema(include_headers=True)
    rows = batch.to_pylist()
    assert [row["offset"] for row in rows] == [2, 3, 4, 6, 7]
    assert [row["value"] for row in rows] == [b"v2", b"v3", b"v4", b"w0", b"w1"]
    assert [row["key"] for row in rows] == [b"k2", b"k3", b"k4", None, None]
    assert {row["topic"] for row in rows} == {"orders"} and {row["partition"] for row in rows} == {3}
    assert rows[0]["headers"] == [{"key": "h", "value": b"x2"}] and rows[3]["headers"] == []
    assert [row["timestampType"] for row in rows] == [0, 0, 0, 1, 1]
    assert batch.column("timestamp").cast("int64").to_pylist()[0] == (1_700_000_000_000 + 2) * 1000


def test_a_page_entirely_outside_the_range_gives_no_batch():
    data = encode_batch([(None, b"v")] * 3, base_offset=10)
    assert records_to_arrow(data, "t", 0, 13, 20, include_headers=False) is None
    assert records_to_arrow(data, "t", 0, 0, 10, include_headers=False) is None
    whole = records_to_arrow(data, "t", 0, 10, 13, include_headers=False)
    assert whole is not None and whole.num_rows == 3 and "headers" not in whole.schema.names


RECORD = st.tuples(
    st.one_of(st.none(), st.binary(max_size=30)),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.integers(min_value=0, max_value=2**40),
)


def _page(batches: list[list[tuple[bytes | None, bytes | None, int]]]) -> bytes:
    page, base_offset = b"", 0
    for records in batches:
        page += encode_batch(
            [(key, value, [], timestamp) for key, value, timestamp in records], base_offset=base_offset
        )
        base_offset += len(records) + 3
    return page


@settings(max_examples=150, deadline=None)
@given(batches=st.lists(st.lists(RECORD, min_size=1, max_size=40), min_size=1, max_size=4))
def test_the_columnar_decoder_reads_every_headerless_page_as_the_record_decoder_does(batches):
    page = _page(batches)
    columns = page_columns(page)
    expected = decode_columns(page)
    assert columns is not None
    assert columns.offsets.tolist() == expected.offsets
    assert columns.timestamps_ms.tolist() == expected.timestamps
    assert columns.keys.to_pylist() == expected.keys
    assert columns.values.to_pylist() == expected.values
    last = expected.offsets[-1] + 1
    fast = records_to_arrow(page, "t", 4, 1, last, include_headers=False)
    general = records_to_arrow(page, "t", 4, 1, last, include_headers=True)
    assert (fast is None) == (general is None)
    if fast is not None and general is not None:
        assert fast.equals(general.drop_columns(["headers"]))


def test_runs_of_equal_sized_records_are_found_where_their_size_changes():
    """200 equal records (their offset delta's varint grows to two bytes at index 64), then
    records of every size: the starts found by runs and by the walk are the record decoder's."""
    records: list[tuple[bytes | None, bytes, list, int]] = [(None, b"v" * 100, [], 1_700_000_000_000)] * 200
    records += [(b"k", b"x" * size, [], 1_700_000_000_000 + size) for size in range(30)]
    page = encode_batch(records) + encode_batch([(None, b"w", [])] * 70, base_offset=230)
    columns = page_columns(page)
    expected = decode_columns(page)
    assert columns is not None
    assert columns.offsets.tolist() == expected.offsets == list(range(300))
    assert columns.values.to_pylist() == expected.values
    assert columns.keys.to_pylist() == expected.keys
    assert columns.timestamps_ms.tolist() == expected.timestamps


def test_the_columnar_decoder_leaves_headers_compression_and_corruption_to_the_record_decoder():
    with_headers = encode_batch([(None, b"v", [("h", b"x")]), (None, b"w", [])])
    assert page_columns(with_headers) is None
    assert page_columns(encode_batch([(None, b"v" * 100)] * 10, compression=GZIP)) is None
    corrupt = bytearray(encode_batch([(None, b"v")] * 3))
    corrupt[-1] ^= 0xFF
    with pytest.raises(CorruptRecord):
        page_columns(bytes(corrupt))
    with pytest.raises(CorruptRecord):
        records_to_arrow(bytes(corrupt), "t", 0, 0, 3, include_headers=False)
