from __future__ import annotations

from kio.schema.errors import ErrorCode

from broker.kafka.fencing import check_leader_epoch


def test_no_epoch_or_the_current_one_passes() -> None:
    assert check_leader_epoch(-1, 5) == ErrorCode.none
    assert check_leader_epoch(5, 5) == ErrorCode.none


def test_an_older_epoch_is_fenced_and_a_newer_one_unknown() -> None:
    assert check_leader_epoch(4, 5) == ErrorCode.fenced_leader_epoch
    assert check_leader_epoch(6, 5) == ErrorCode.unknown_leader_epoch
