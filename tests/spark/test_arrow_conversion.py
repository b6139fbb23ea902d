"""Raw record batches -> Arrow in the source schema: trimming, control batches, exact types."""

from __future__ import annotations

import struct

from broker.record.codec import LOG_APPEND_TIME, encode_batch
from broker.record.header import ATTRIBUTES_OFFSET, CONTROL_MASK, CRC_OFFSET, crc32c
from spark_connector.arrow import arrow_schema, records_to_arrow


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
