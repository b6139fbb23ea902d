"""Every highwater error a Kafka client can meet has the Kafka code a Kafka client acts on."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.error_table import ERROR_TABLE
from broker.errors import (
    CorruptRecord,
    FencedLeaderEpoch,
    NotEnoughReplicas,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    RecordTooLarge,
    RequestTimedOut,
    UnknownPartition,
    UnknownTopic,
)
from broker.kafka.errors import RENAMED, kafka_error_code


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NotLeaderOrFollower("x"), ErrorCode.not_leader_or_follower),
        (UnknownTopic("x"), ErrorCode.unknown_topic_or_partition),
        (UnknownPartition("x"), ErrorCode.unknown_topic_or_partition),
        (NotEnoughReplicas("x"), ErrorCode.not_enough_replicas),
        (OffsetOutOfRange("x"), ErrorCode.offset_out_of_range),
        (CorruptRecord("x"), ErrorCode.corrupt_message),
        (RecordTooLarge("x"), ErrorCode.message_too_large),
        (RequestTimedOut("x"), ErrorCode.request_timed_out),
        (FencedLeaderEpoch("x"), ErrorCode.fenced_leader_epoch),
    ],
)
def test_the_errors_of_produce_and_fetch_keep_their_kafka_meaning(error: Exception, code: ErrorCode) -> None:
    assert kafka_error_code(error) == code


def test_every_row_of_the_error_table_has_a_kafka_code_and_only_the_base_is_unknown() -> None:
    unknown = [row.__name__ for row in ERROR_TABLE if kafka_error_code(row("x")) == ErrorCode.unknown_server_error]
    assert unknown == ["HighwaterError", "UnexpectedAppendOffset"]


def test_a_name_kafka_has_maps_to_that_very_code_and_renames_only_cover_names_it_lacks() -> None:
    kafka_names = {code.name for code in ErrorCode}
    assert not set(RENAMED) & {name.upper() for name in kafka_names}
    for row in ERROR_TABLE:
        if row.name.lower() in kafka_names:
            assert kafka_error_code(row("x")).name == row.name.lower()


def test_an_exception_that_is_not_a_highwater_error_is_an_unknown_server_error() -> None:
    assert kafka_error_code(RuntimeError("bug")) == ErrorCode.unknown_server_error
