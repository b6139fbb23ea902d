"""ApiVersions: which APIs and versions this listener serves, from the one table in ``apis``.

Kafka's rule for a version it does not support, followed here: answer ApiVersions v0
with ``UNSUPPORTED_VERSION`` and the supported ranges, so the client can retry with a
version both sides know (KIP-511). The response header of ApiVersions is always v0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.primitive import i16

from broker.kafka.codec import DecodedRequest
from broker.kafka.context import RequestContext, VersionRange
from broker.kafka.shapes import NO_THROTTLE, build, shape

API_KEY = 18


def api_versions_response(version: int, error_code: ErrorCode, supported: Mapping[int, VersionRange]) -> Any:
    entry = shape(API_KEY, version, "ApiVersion")
    api_keys = tuple(
        entry(api_key=i16(key), min_version=i16(span.min_version), max_version=i16(span.max_version))
        for key, span in sorted(supported.items())
    )
    return build(
        shape(API_KEY, version, "ApiVersionsResponse"),
        error_code=error_code,
        api_keys=api_keys,
        throttle_time=NO_THROTTLE,
    )


async def handle(context: RequestContext, request: DecodedRequest) -> Any:
    return api_versions_response(request.prefix.api_version, ErrorCode.none, context.supported)
