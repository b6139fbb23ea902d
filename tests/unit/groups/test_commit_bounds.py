"""Committed offsets beyond the high watermark: refused at commit time, flagged in lag (``broker.groups.commit_bounds``)."""

from __future__ import annotations

import pytest

from broker.errors import OffsetNotAvailable, OffsetOutOfRange
from broker.groups.commit_bounds import check_commit_offset, lag
from broker.groups.lag_status import AHEAD, ERR, OK, CommitSample, group_status, partition_status


@pytest.mark.parametrize("offset", [0, 5, 10])
def test_offsets_up_to_the_high_watermark_are_accepted(offset: int) -> None:
    check_commit_offset("t", 0, offset, high_watermark=10, log_end_offset=12)


@pytest.mark.parametrize("offset", [11, 12])
def test_an_offset_the_leader_holds_above_its_high_watermark_is_retriable(offset: int) -> None:
    with pytest.raises(OffsetNotAvailable) as raised:
        check_commit_offset("t", 0, offset, high_watermark=10, log_end_offset=12)
    assert raised.value.retriable
    assert raised.value.details == {"topic_name": "t", "partition_id": 0, "offset": offset, "high_watermark": 10}


def test_an_offset_beyond_the_log_end_is_out_of_range_naming_offset_and_high_watermark() -> None:
    with pytest.raises(OffsetOutOfRange) as raised:
        check_commit_offset("t", 3, 13, high_watermark=10, log_end_offset=12)
    assert not raised.value.retriable
    assert raised.value.http_status == 416
    assert "cannot commit offset 13 for t-3: it is above the high watermark 10" in raised.value.message


def test_a_committed_offset_beyond_the_high_watermark_is_ahead_never_ok() -> None:
    assert lag(10, 13) == -3
    samples = [CommitSample(13, 1_000, 0)]
    assert partition_status(samples, lag(10, 13), 2_000) == AHEAD
    assert partition_status([], lag(10, 13), 2_000, nothing_to_read=True) == AHEAD
    assert partition_status(samples, lag(13, 13), 2_000) == OK
    assert group_status([OK, AHEAD]) == ERR
