"""``validate_produced_batches`` walks records without decoding them: it must refuse exactly what decoding refuses.

The walk is a copy of the decoder's checks with the outputs left out, so the pin is a
property against the decoder itself: on valid batches both accept, and on every
single-byte corruption of the records section (CRC recomputed, so only the record
checks stand between the bytes and the log) the walk refuses iff ``decode_batch``
refuses or the decoded offset deltas are not 0..n-1.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.errors import CorruptRecord
from broker.record.codec import RecordInput, encode_batch
from broker.record.compression import GZIP, LZ4, NONE, ZSTD, compress
from broker.record.decode import decode_batch, validate_produced_batches
from broker.record.header import RECORDS_OFFSET, iter_batches
from tests.unit.record.test_codec_corruption import ONE_RECORD, batch_with_records_section

CODECS = st.sampled_from([NONE, GZIP, LZ4, ZSTD])

record_strategy = st.builds(
    RecordInput,
    key=st.none() | st.binary(max_size=70),
    value=st.none() | st.binary(max_size=300),
    headers=st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=6)), max_size=2),
    timestamp=st.integers(min_value=0, max_value=1 << 45),
)
records_strategy = st.lists(record_strategy, min_size=1, max_size=80)


def _plain_section(records: list[RecordInput]) -> bytes:
    return encode_batch(records, base_timestamp=0)[RECORDS_OFFSET:]


def _decoder_refuses_as_produced(batch: bytes) -> bool:
    """What the validator refused before it stopped decoding: a record that does not decode, or deltas out of order."""
    try:
        header, records = decode_batch(batch)
    except CorruptRecord:
        return True
    return [record.offset - header.base_offset for record in records] != list(range(header.records_count))


def _validator_refuses(batch: bytes) -> bool:
    try:
        validate_produced_batches(batch)
    except CorruptRecord:
        return True
    return False


@settings(max_examples=80, deadline=None)
@given(records=records_strategy, codec=CODECS)
def test_valid_batches_are_accepted_by_both(records: list[RecordInput], codec: int) -> None:
    batch = encode_batch(records, compression=codec)
    assert not _decoder_refuses_as_produced(batch)
    assert validate_produced_batches(batch) == tuple(iter_batches(batch))


@settings(max_examples=300, deadline=None)
@given(records=records_strategy, codec=CODECS, data=st.data())
def test_a_corrupted_byte_is_refused_iff_the_decoder_refuses_it(
    records: list[RecordInput], codec: int, data: st.DataObject
) -> None:
    section = bytearray(_plain_section(records))
    index = data.draw(st.integers(min_value=0, max_value=len(section) - 1), label="index")
    section[index] = data.draw(st.integers(min_value=0, max_value=255).filter(lambda b: b != section[index]))
    payload = compress(codec, bytes(section)) if codec != NONE else bytes(section)
    batch = batch_with_records_section(payload, len(records), compression=codec)
    assert _validator_refuses(batch) == _decoder_refuses_as_produced(batch)


def test_it_returns_the_headers_of_every_batch_it_checked() -> None:
    batches = encode_batch([(b"k", b"v")] * 3) + encode_batch([(None, b"w")], compression=ZSTD)
    headers = validate_produced_batches(batches)
    assert [(h.position, h.records_count, h.compression) for h in headers] == [(0, 3, NONE), (headers[0].size, 1, ZSTD)]


TWO_RECORDS = ONE_RECORD + ONE_RECORD[:3] + b"\x02" + ONE_RECORD[4:]
"""Offset deltas 0 and 1, as a producer writes them."""
HEADER_KEY_NOT_UTF8 = bytes.fromhex("18 00 00 00 02 6b 02 76 02 02 ff 02 78".replace(" ", ""))
HEADER_KEY_UTF8 = bytes.fromhex("18 00 00 00 02 6b 02 76 02 02 78 02 78".replace(" ", ""))


@pytest.mark.parametrize(
    ("section", "count", "compression", "refusal"),
    [
        (TWO_RECORDS, 3, NONE, "declares 3 records but its records section holds only 2"),
        (TWO_RECORDS, 1, NONE, f"declares 1 records but {len(ONE_RECORD)} bytes follow"),
        (b"\x12" + ONE_RECORD[1:] + b"\x00", 1, NONE, "record 0 declares 9 bytes but its fields take 8"),
        (bytes.fromhex("20000000ffffffffff01") + b"k" * 20, 1, NONE, "bad varint"),
        (bytes.fromhex("0c00000003027600"), 1, NONE, "a record key has length -2"),
        (bytes.fromhex("0e000000026b0300"), 1, NONE, "a record value has length -2"),
        (bytes.fromhex("10000000026b7e7600"), 1, NONE, "runs past the end of the records section"),
        (bytes.fromhex("10000000026b027601"), 1, NONE, "a record has -1 headers"),
        (HEADER_KEY_NOT_UTF8, 1, NONE, "header key is not UTF-8"),
        (ONE_RECORD, 1, GZIP, "cannot decompress"),
        (ONE_RECORD, 1, ZSTD, "cannot decompress"),
        (ONE_RECORD * 2, 2, NONE, r"offset deltas are not 0, 1, \.\.\. 1 in order"),
    ],
)
def test_each_malformed_record_is_refused_by_name(section: bytes, count: int, compression: int, refusal: str) -> None:
    with pytest.raises(CorruptRecord, match=refusal):
        validate_produced_batches(batch_with_records_section(section, count, compression))


def test_a_utf8_header_key_passes_where_a_bad_one_does_not() -> None:
    """The control for the UTF-8 case above: the refusal is about the key's bytes, not about having a header."""
    (header,) = validate_produced_batches(batch_with_records_section(HEADER_KEY_UTF8, 1))
    assert header.records_count == 1
