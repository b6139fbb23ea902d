"""The replica fetch framing round-trips every field and refuses truncated input."""

from __future__ import annotations

import struct

import pytest

from broker.errors import CorruptRecord, FencedLeaderEpoch, NotLeaderOrFollower
from broker.replication.actions import DivergingEpoch
from broker.replication.fetch_wire import (
    FetchPartition,
    FetchPartitionResponse,
    FetchRequest,
    FetchResponse,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)


def test_request_round_trip() -> None:
    request = FetchRequest(
        replica_id=2,
        broker_epoch=17,
        max_wait_ms=500,
        max_bytes=1 << 20,
        partitions=[FetchPartition("orders", 0, 42, 3, 4, 0), FetchPartition("ünïcode-t", 7, 0, -1, 0, 0)],
        session_id=123456,
        session_epoch=9,
        forgotten=(("gone", 3), ("ünïcode-t", 1)),
    )
    assert decode_request(encode_request(request)) == request


def test_response_round_trip_with_errors_divergence_and_records() -> None:
    responses = [
        FetchPartitionResponse("orders", 0, 10, 0, 12, records=b"\x00" * 100),
        FetchPartitionResponse("orders", 1, 5, 0, 9, diverging_epoch=DivergingEpoch(2, 7)),
        FetchPartitionResponse("orders", 2, -1, -1, -1, error=FencedLeaderEpoch("epoch 3 is older than 4")),
        FetchPartitionResponse("orders", 3, -1, -1, -1, error=NotLeaderOrFollower("not here")),
    ]
    answer = decode_response(encode_response(FetchResponse(responses, session_id=77)))
    assert (answer.session_id, answer.session_error) == (77, 0)
    decoded = answer.partitions
    assert [(r.topic, r.partition, r.high_watermark, r.log_end_offset, r.records) for r in decoded] == [
        (r.topic, r.partition, r.high_watermark, r.log_end_offset, r.records) for r in responses
    ]
    assert decoded[1].diverging_epoch == DivergingEpoch(2, 7)
    assert isinstance(decoded[2].error, FencedLeaderEpoch) and decoded[2].error.message == "epoch 3 is older than 4"
    assert isinstance(decoded[3].error, NotLeaderOrFollower) and decoded[3].error.retriable


@pytest.mark.parametrize("cut", [1, 5, 20, 40])
def test_truncated_messages_are_refused(cut: int) -> None:
    raw = encode_response(FetchResponse([FetchPartitionResponse("orders", 0, 10, 0, 12, records=b"abc")]))
    with pytest.raises(CorruptRecord, match="truncated"):
        decode_response(raw[: len(raw) - cut])


def _one_partition_request(topic: bytes) -> bytes:
    return (
        struct.pack(">iqiiiii", 2, 0, 100, 1024, 0, -1, 1)
        + struct.pack(">H", len(topic))
        + topic
        + struct.pack(">iqiiq", 0, 0, 0, 0, 0)
        + struct.pack(">i", 0)
    )


@pytest.mark.parametrize(
    "message",
    [
        _one_partition_request(b"\xff\xfe"),
        _one_partition_request(b"t") + b"\x00",
        struct.pack(">iqiiiiii", 2, 0, -1, 1024, 0, -1, 0, 0),
        struct.pack(">iqiiiiii", 2, 0, 100, -5, 0, -1, 0, 0),
        struct.pack(">iqiiiiii", 2, 0, 100, 1024, 0, -1, -1, 0),
        struct.pack(">iqiiiiii", 2, 0, 100, 1024, 0, -2, 0, 0),
        struct.pack(">iqiiiiii", 2, 0, 100, 1024, 0, -1, 0, -1),
    ],
    ids=[
        "topic-not-utf8",
        "trailing-byte",
        "negative-wait",
        "negative-bytes",
        "negative-count",
        "session-epoch-below-sessionless",
        "negative-forgotten-count",
    ],
)
def test_malformed_requests_are_corrupt_not_a_crash(message: bytes) -> None:
    """Found by fuzzing the internal route: a non-UTF-8 topic raised UnicodeDecodeError (500)."""
    with pytest.raises(CorruptRecord):
        decode_request(message)
