"""The Kafka door answers the replication core's leader-epoch rule with Kafka's codes."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.kafka.errors import kafka_error_code
from broker.kafka.fencing import require_leader_epoch


def _code(requested_epoch: int, leader_epoch: int) -> ErrorCode:
    try:
        require_leader_epoch("orders", 0, requested_epoch, leader_epoch)
    except Exception as error:  # noqa: BLE001 - the handlers answer any error with its code
        return kafka_error_code(error)
    return ErrorCode.none


def test_no_epoch_or_the_current_one_passes() -> None:
    assert _code(-1, 5) == ErrorCode.none
    assert _code(5, 5) == ErrorCode.none


@pytest.mark.parametrize(
    ("requested", "code"), [(4, ErrorCode.fenced_leader_epoch), (6, ErrorCode.unknown_leader_epoch)]
)
def test_an_older_epoch_is_fenced_and_a_newer_one_unknown(requested: int, code: ErrorCode) -> None:
    assert _code(requested, 5) == code
