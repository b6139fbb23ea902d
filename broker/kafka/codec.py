"""Request and response headers around kio's message classes (pure).

A request frame is a request header then the body; which header (v1, or v2 with
tagged fields) depends on whether the request's API version is "flexible", which
kio records per class as ``__header_schema__``. A response is a response header (v0,
or v1 for flexible versions — except ApiVersions, always v0 so that a client that
does not know the broker's versions yet can read it) then the body; kio's response
classes carry that rule the same way, so it is never restated here.

Every request starts with ``api_key`` (int16), ``api_version`` (int16) and
``correlation_id`` (int32) in every header version, so those three are readable even
when the rest is not: that is what an answer to an unsupported request needs.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

HEADER_PREFIX = struct.Struct(">hhi")
"""api_key, api_version, correlation_id: the first 8 bytes of every request header version."""


class MalformedRequest(Exception):
    """A frame whose header or body does not parse as the message it claims to be."""


@dataclass(frozen=True)
class RequestPrefix:
    api_key: int
    api_version: int
    correlation_id: int


def read_prefix(frame: bytes) -> RequestPrefix:
    if len(frame) < HEADER_PREFIX.size:
        raise MalformedRequest(f"a request of {len(frame)} bytes is shorter than any request header")
    return RequestPrefix(*HEADER_PREFIX.unpack_from(frame))


@dataclass(frozen=True)
class DecodedRequest:
    prefix: RequestPrefix
    client_id: str | None
    body: Any
    """An instance of kio's request class for ``prefix.api_key`` at ``prefix.api_version``."""


def decode_request(frame: bytes, prefix: RequestPrefix, request_class: Any) -> DecodedRequest:
    """Header and body of ``frame``; ``MalformedRequest`` if either does not parse.

    Bytes after the end of the body are ignored, as Kafka's own request parsing ignores
    them: librdkafka 2.16 sends three after a Metadata v12 request for all topics.
    """
    try:
        header, header_size = entity_reader(request_class.__header_schema__)(frame, 0)
        body, _ = entity_reader(request_class)(frame, header_size)
    except Exception as error:  # kio raises many kinds on bad bytes; all mean the same here
        raise MalformedRequest(f"{request_class.__name__} v{prefix.api_version}: {error}") from error
    return DecodedRequest(prefix, header.client_id, body)


def encode_response(correlation_id: int, response: Any) -> bytes:
    """The response header kio's class names for ``response``, then ``response`` itself (no size prefix)."""
    header_class = type(response).__header_schema__
    buffer = io.BytesIO()
    entity_writer(header_class)(buffer, header_class(correlation_id=i32(correlation_id)))
    entity_writer(type(response))(buffer, response)
    return buffer.getvalue()


def encode_request(correlation_id: int, request: Any, client_id: str | None = "highwater") -> bytes:
    """A request frame's payload: the inverse of ``decode_request``, for tests and tools."""
    header_class = type(request).__header_schema__
    header = header_class(
        request_api_key=request.__api_key__,
        request_api_version=request.__version__,
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buffer = io.BytesIO()
    entity_writer(header_class)(buffer, header)
    entity_writer(type(request))(buffer, request)
    return buffer.getvalue()


def decode_response(payload: bytes, response_class: Any) -> tuple[int, Any]:
    """(correlation id, response) of a response payload: the inverse of ``encode_response``."""
    header, header_size = entity_reader(response_class.__header_schema__)(payload, 0)
    body, _ = entity_reader(response_class)(payload, header_size)
    return header.correlation_id, body
