"""What the dispatcher does with requests it cannot serve: answer UNSUPPORTED_VERSION, or refuse bad bytes."""

from __future__ import annotations

import struct

import pytest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode

from broker.kafka.apis import SUPPORTED
from broker.kafka.codec import MalformedRequest, decode_response
from broker.kafka.dispatch import Routed, route
from tests.unit.kafka import requests


def unsupported(frame: bytes, correlation_id: int) -> None:
    answer = route(frame)
    assert isinstance(answer, bytes)
    got_id, response = decode_response(answer, ApiVersionsResponse)
    assert got_id == correlation_id
    assert response.error_code == ErrorCode.unsupported_version
    assert {k.api_key: (k.min_version, k.max_version) for k in response.api_keys} == {
        key: (span.min_version, span.max_version) for key, span in SUPPORTED.items()
    }


def test_an_api_versions_version_above_ours_gets_v0_with_the_ranges() -> None:
    unsupported(requests.frame(18, 4, requests.api_versions(4), correlation_id=7), 7)


def test_an_unknown_api_key_gets_the_same_answer_not_a_dropped_connection() -> None:
    unsupported(struct.pack(">hhi", 999, 0, 31) + b"\x00\x00anything", 31)


def test_a_known_api_at_a_version_outside_the_table_is_answered_unsupported() -> None:
    unsupported(requests.frame(1, 13, requests.fetch(13, "t", 0), correlation_id=8), 8)


def test_a_supported_request_is_routed_with_its_header() -> None:
    routed = route(requests.frame(3, 9, requests.metadata(9, ["t"]), correlation_id=5))
    assert isinstance(routed, Routed)
    assert (routed.api_name, routed.request.prefix.correlation_id, routed.request.client_id) == (
        "Metadata",
        5,
        "highwater",
    )


@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x03\x00",
        struct.pack(">hhi", 3, 9, 1) + b"\xff\xff\xff",
        requests.frame(3, 9, requests.metadata(9, ["t"]))[:-3],
    ],
    ids=["empty", "shorter-than-a-header", "garbage-body", "cut-short"],
)
def test_bytes_that_are_not_the_request_they_claim_are_malformed(frame: bytes) -> None:
    with pytest.raises(MalformedRequest):
        route(frame)


def test_bytes_after_the_body_are_ignored_as_kafka_ignores_them() -> None:
    """librdkafka 2.16's Metadata v12 request for all topics carries three such bytes."""
    routed = route(bytes.fromhex("0003000c00000003000772646b61666b610000000000010000"))
    assert isinstance(routed, Routed)
    assert routed.request.body.topics is None
