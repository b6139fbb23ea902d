"""JSON record bodies <-> stored bytes, and stored bytes -> the reader's chosen format."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from broker.errors import InvalidRequest
from broker.record.codec import Record, encode_batch
from broker.record.decode import decode_batch
from broker.server.json_records import (
    DataType,
    EncodedRecord,
    ProduceRecord,
    ReadFormat,
    encode_record,
    render_data,
    render_record,
    size_report,
    timestamp_ms,
)

NOW_MS = 1_700_000_000_000


def encode(body: dict) -> EncodedRecord:
    return encode_record(ProduceRecord.model_validate(body), NOW_MS)


def test_json_value_is_stored_as_compact_json_text() -> None:
    encoded = encode({"value": {"type": "JSON", "data": {"a": [1, 2], "b": "é"}}})
    assert encoded.record.value == '{"a":[1,2],"b":"é"}'.encode()
    assert encoded.value_type is DataType.JSON


def test_type_defaults_to_json_and_is_case_insensitive() -> None:
    assert encode({"value": {"data": "hi"}}).record.value == b'"hi"'
    assert encode({"value": {"type": "string", "data": "hi"}}).record.value == b"hi"


def test_binary_is_base64_decoded() -> None:
    encoded = encode({"key": {"type": "BINARY", "data": base64.b64encode(b"\x00\xff").decode()}})
    assert encoded.record.key == b"\x00\xff"
    assert encoded.key_type is DataType.BINARY


def test_absent_or_null_data_is_a_null_key_and_value() -> None:
    encoded = encode({"key": {"type": "STRING", "data": None}})
    assert encoded.record.key is None and encoded.record.value is None
    assert encoded.key_type is None and encoded.value_type is None


def test_bad_base64_names_the_field() -> None:
    with pytest.raises(InvalidRequest, match=r"key.data is not valid base64"):
        encode({"key": {"type": "BINARY", "data": "not base64!"}})


def test_string_type_refuses_non_string_data() -> None:
    with pytest.raises(InvalidRequest, match=r"value.data must be a string for type STRING"):
        encode({"value": {"type": "STRING", "data": 12}})


def test_unknown_type_is_a_validation_error_naming_the_field() -> None:
    with pytest.raises(ValidationError) as raised:
        ProduceRecord.model_validate({"value": {"type": "AVRO", "data": 1}})
    assert raised.value.errors()[0]["loc"] == ("value", "type")


def test_unknown_fields_are_ignored_like_the_rest_proxy() -> None:
    encoded = encode({"value": {"type": "STRING", "data": "x", "schema_id": 3}, "whatever": True})
    assert encoded.record.value == b"x"


def test_headers_are_base64_and_may_be_null() -> None:
    encoded = encode({"headers": [{"name": "h1", "value": base64.b64encode(b"v").decode()}, {"name": "h2"}]})
    assert list(encoded.record.headers) == [("h1", b"v"), ("h2", None)]


def test_bad_header_base64_names_the_header() -> None:
    with pytest.raises(InvalidRequest, match=r"headers\[0\].value"):
        encode({"headers": [{"name": "h", "value": "%%%"}]})


def test_timestamps_ms_iso_and_default() -> None:
    assert encode({"timestamp": 5}).record.timestamp == 5
    assert encode({}).record.timestamp == NOW_MS
    assert encode({"timestamp": "2021-02-05T19:14:42Z"}).record.timestamp == 1612552482000
    assert timestamp_ms(None, 7) == 7
    with pytest.raises(InvalidRequest):
        timestamp_ms(-1, 7)


def test_size_report() -> None:
    assert size_report(DataType.STRING, b"abc") == {"type": "STRING", "size": 3}
    assert size_report(None, None) is None


@pytest.mark.parametrize(
    ("data", "fmt", "expected"),
    [
        (b"hi", ReadFormat.BINARY, {"type": "BINARY", "data": "aGk="}),
        (b"hi", ReadFormat.STRING, {"type": "STRING", "data": "hi"}),
        (b"\xff\xfe", ReadFormat.STRING, {"type": "BINARY", "data": "//4="}),
        (b'{"a":1}', ReadFormat.JSON, {"type": "JSON", "data": {"a": 1}}),
        (b"plain", ReadFormat.JSON, {"type": "STRING", "data": "plain"}),
        (b"\xff", ReadFormat.JSON, {"type": "BINARY", "data": "/w=="}),
        (None, ReadFormat.STRING, None),
    ],
)
def test_render_data_falls_back_and_says_which_type(data, fmt, expected) -> None:
    assert render_data(data, fmt) == expected


def test_render_record() -> None:
    record = Record(offset=7, timestamp=9, key=b"k", value=None, headers=[("h", b"\x01"), ("n", None)])
    assert render_record("t", 2, record, ReadFormat.STRING) == {
        "topic_name": "t",
        "partition_id": 2,
        "offset": 7,
        "timestamp": 9,
        "headers": [{"name": "h", "value": "AQ=="}, {"name": "n", "value": None}],
        "key": {"type": "STRING", "data": "k"},
        "value": None,
    }


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=10,
)


@given(key=json_values, value=json_values, raw=st.binary(max_size=50))
def test_produce_then_read_round_trips_through_a_real_batch(key, value, raw) -> None:
    encoded = [
        encode({"key": {"type": "JSON", "data": key}, "value": {"type": "JSON", "data": value}}),
        encode({"value": {"type": "BINARY", "data": base64.b64encode(raw).decode()}}),
    ]
    _, records = decode_batch(encode_batch([item.record for item in encoded]))
    first = render_record("t", 0, records[0], ReadFormat.JSON)
    if key is not None:
        assert first["key"] == {"type": "JSON", "data": json.loads(json.dumps(key))}
    if value is not None:
        assert first["value"]["data"] == json.loads(json.dumps(value))
    second = render_record("t", 0, records[1], ReadFormat.BINARY)
    assert base64.b64decode(second["value"]["data"]) == raw
