"""Records in the JSON shape of the REST Proxy v3, to and from the bytes of record batch v2.

Produce side: a record arrives as ``{partition_id?, headers?, key?, value?, timestamp?}``
where ``key`` and ``value`` are ``{"type": "JSON"|"STRING"|"BINARY", "data": ...}``.

* ``JSON`` (the default when ``type`` is absent): ``data`` is any JSON value, stored as
  its compact UTF-8 JSON text. ``{"data": "hi"}`` stores ``"hi"`` *with* the quotes.
* ``STRING``: ``data`` must be a JSON string, stored as its UTF-8 bytes.
* ``BINARY``: ``data`` is base64 text, stored as the decoded bytes.
* ``data: null`` (or an absent key/value) is a null key/value, as in Kafka.

Header values are base64 (or null), header names plain strings, as in the REST Proxy.
``timestamp`` is milliseconds since the epoch or an ISO-8601 date-time (the REST Proxy
sends the latter); absent means "now" at the broker.

Read side: a stored key/value is shown in the ``format`` the reader asked for, and each
field carries the ``type`` it was actually rendered as, so a reader is never misled:
``binary`` gives base64; ``string`` gives text when the bytes are UTF-8 and falls back to
base64 when they are not; ``json`` parses the bytes as JSON, falling back to ``string``
then ``binary`` (also for JSON nested deeper than ``MAX_JSON_DEPTH``, which the broker
never parses). Header values are always base64, symmetrical with the produce side.

This module is pure: no asyncio, no I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, NamedTuple

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator
from pydantic.config import JsonDict

from broker.errors import InvalidRequest
from broker.record.codec import Record, RecordInput
from broker.server.api_routes import DocumentedAs
from broker.server.json_depth import nests_too_deeply
from broker.server.params import JsonInt
from broker.server.partition_ids import PartitionId

INT64_MAX = 2**63 - 1
BASE64 = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
"""Standard base64 with padding, as ``base64.b64decode(validate=True)`` accepts it."""
BASE64_TEXT: JsonDict = {"pattern": BASE64, "contentEncoding": "base64"}


class DataType(StrEnum):
    JSON = "JSON"
    STRING = "STRING"
    BINARY = "BINARY"


class ReadFormat(StrEnum):
    """How a reader wants keys and values rendered (query ``format=``)."""

    BINARY = "binary"
    STRING = "string"
    JSON = "json"


def _data_variants(schema: dict[str, Any]) -> None:
    """The rules ``encode_data`` adds to the model's: STRING data is a string, BINARY data base64."""
    schema.clear()
    schema["anyOf"] = [
        {"type": "object", "properties": {"type": {"const": "JSON"}, "data": {}}, "required": ["type"]},
        {"type": "object", "properties": {"data": {}}, "not": {"required": ["type"]}},
        {
            "type": "object",
            "properties": {"type": {"const": "STRING"}, "data": {"type": ["string", "null"]}},
            "required": ["type"],
        },
        {
            "type": "object",
            "properties": {"type": {"const": "BINARY"}, "data": {"type": ["string", "null"], **BASE64_TEXT}},
            "required": ["type"],
        },
    ]
    schema["description"] = "JSON (the default) data is any JSON value; STRING data a string; BINARY data base64"


class RecordData(BaseModel):
    """A key or a value of a produced record; unknown fields are ignored as the REST Proxy does."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_data_variants)

    type: DataType = DataType.JSON
    data: Any = None

    @field_validator("type", mode="before")
    @classmethod
    def _upper_case_type(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class HeaderInput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    value: str | None = Field(None, json_schema_extra=BASE64_TEXT)


def _date_time_text(value: Any) -> Any:
    """Only an RFC 3339 text (``2026-11-25T01:30:00Z``), not the numbers pydantic would also read as dates."""
    if not isinstance(value, str) or not value[:4].isdigit() or value[4:5] != "-":
        raise ValueError("must be milliseconds since the epoch or an RFC 3339 date-time")
    return value


DateTimeText = Annotated[
    datetime,
    BeforeValidator(_date_time_text),
    WithJsonSchema({"type": "string", "format": "date-time", "pattern": "^(19[7-9][0-9]|[2-9][0-9]{3})-"}),
]
"""Documented with ``timestamp_ms``'s rule: not before 1970."""
TimestampMs = Annotated[
    JsonInt, WithJsonSchema({"type": "integer", "minimum": 0, "maximum": INT64_MAX, "format": "int64"})
]
"""Documented with ``timestamp_ms``'s rule: int64, never negative."""


class ProduceRecord(BaseModel):
    """One record of ``POST …/records``, or one entry of ``records:batch`` (which adds ``id``)."""

    model_config = ConfigDict(extra="ignore")

    partition_id: PartitionId | None = Field(None, description="default: key hash (murmur2) or round-robin")
    headers: list[HeaderInput] = Field(default_factory=list)
    key: RecordData | None = None
    value: RecordData | None = None
    timestamp: TimestampMs | DateTimeText | None = Field(
        None, description="ms since the epoch or ISO-8601, not before 1970-01-01T00:00:00Z"
    )


class BatchEntry(ProduceRecord):
    id: str | int | None = None


class BatchRequest(BaseModel):
    """Body of ``records:batch``; entries stay raw so one bad entry fails alone. Only ``entries`` is known.

    The handler refuses an empty list and one longer than ``max_batch_entries`` (400); the
    document states both bounds.
    """

    model_config = ConfigDict(extra="forbid")

    entries: list[Annotated[dict[str, Any], DocumentedAs(BatchEntry)]] = Field(json_schema_extra={"minItems": 1})


class EncodedRecord(NamedTuple):
    """A produced record in bytes, with what its delivery report needs."""

    record: RecordInput
    partition_id: int | None
    key_type: DataType | None
    value_type: DataType | None


def encode_data(field_name: str, item: RecordData | None) -> bytes | None:
    """The bytes stored for one key or value; ``InvalidRequest`` names the field on bad data."""
    if item is None or item.data is None:
        return None
    if item.type is DataType.JSON:
        return json.dumps(item.data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if not isinstance(item.data, str):
        raise InvalidRequest(f"{field_name}.data must be a string for type {item.type.value}")
    if item.type is DataType.STRING:
        return item.data.encode("utf-8")
    return decode_base64(f"{field_name}.data", item.data)


def decode_base64(field_name: str, text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise InvalidRequest(f"{field_name} is not valid base64: {error}") from error


def timestamp_ms(value: int | datetime | None, now_ms: int) -> int:
    """Milliseconds since the epoch in Kafka's int64 range; a naive date-time is taken as UTC.

    A date-time before 1970 is refused like a negative number: a record timestamp is
    never negative (Kafka's -1 means "none"), and one far in the past would make the
    batch's timestamp deltas overflow their int64 varlongs.
    """
    if value is None:
        return now_ms
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = int(value.timestamp() * 1000)
    if not 0 <= value <= INT64_MAX:
        raise InvalidRequest(f"timestamp must be 0 to {INT64_MAX} milliseconds since the epoch, got {value}")
    return value


def encode_record(record: ProduceRecord, now_ms: int) -> EncodedRecord:
    """Turn a validated JSON record into the tuple the batch codec encodes."""
    headers = [
        (header.name, None if header.value is None else decode_base64(f"headers[{index}].value", header.value))
        for index, header in enumerate(record.headers)
    ]
    key = encode_data("key", record.key)
    value = encode_data("value", record.value)
    return EncodedRecord(
        record=RecordInput(key, value, headers, timestamp_ms(record.timestamp, now_ms)),
        partition_id=record.partition_id,
        key_type=None if key is None else record.key.type,  # type: ignore[union-attr]
        value_type=None if value is None else record.value.type,  # type: ignore[union-attr]
    )


def size_report(data_type: DataType | None, data: bytes | None) -> dict[str, Any] | None:
    """The ``{type, size}`` of a delivery report; null for a null key or value."""
    if data_type is None or data is None:
        return None
    return {"type": data_type.value, "size": len(data)}


def render_data(data: bytes | None, read_format: ReadFormat) -> dict[str, Any] | None:
    """A stored key or value as ``{type, data}`` in the requested format (see module docstring)."""
    if data is None:
        return None
    if read_format is not ReadFormat.BINARY:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None:
            if read_format is ReadFormat.JSON and not nests_too_deeply(data):
                try:
                    return {"type": DataType.JSON.value, "data": json.loads(text)}
                except ValueError:
                    pass
            return {"type": DataType.STRING.value, "data": text}
    return {"type": DataType.BINARY.value, "data": base64.b64encode(data).decode("ascii")}


def render_record(topic: str, partition: int, record: Record, read_format: ReadFormat) -> dict[str, Any]:
    return {
        "topic_name": topic,
        "partition_id": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "headers": [
            {"name": name, "value": None if value is None else base64.b64encode(value).decode("ascii")}
            for name, value in record.headers
        ],
        "key": render_data(record.key, read_format),
        "value": render_data(record.value, read_format),
    }
