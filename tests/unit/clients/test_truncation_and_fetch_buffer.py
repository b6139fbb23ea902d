"""Truncation verdicts, and handing out fetched batches from the consumer's position."""

from __future__ import annotations

from broker.client.types import FetchResult, TopicPartition
from broker.record.codec import encode_batch
from consumer.fetch_buffer import CompletedFetch
from consumer.truncation import check_position, epoch_went_back

TP = TopicPartition("t", 0)
TS = 1_700_000_000_000


def _batch(base_offset: int, count: int, leader_epoch: int) -> bytes:
    records = [
        (f"k{base_offset + i}".encode(), f"v{base_offset + i}".encode(), [("h", b"1")], TS + i) for i in range(count)
    ]
    return encode_batch(records, base_offset=base_offset, partition_leader_epoch=leader_epoch)


def _fetch(data: bytes, fetch_offset: int, high_watermark: int, next_offset: int) -> CompletedFetch:
    return CompletedFetch(TP, 0, fetch_offset, FetchResult(data, high_watermark, 0, high_watermark, next_offset))


def test_a_log_shorter_than_the_position_is_truncated() -> None:
    verdict = check_position(position=10, last_leader_epoch=2, log_end_offset=7, epoch_at_last_consumed=None)
    assert verdict is not None and verdict.divergent_offset == 7


def test_a_rewritten_last_offset_is_truncation() -> None:
    verdict = check_position(position=10, last_leader_epoch=2, log_end_offset=12, epoch_at_last_consumed=3)
    assert verdict is not None and verdict.divergent_offset == 9 and "epoch 3" in verdict.reason


def test_an_intact_log_is_not_truncated() -> None:
    assert check_position(10, 2, 10, 2) is None
    assert check_position(10, 2, 50, None) is None


def test_epoch_going_back_in_the_data_is_divergence() -> None:
    assert epoch_went_back(5, 4)
    assert not epoch_went_back(5, 5) and not epoch_went_back(5, 6)
    assert not epoch_went_back(None, 0)
    assert not epoch_went_back(5, -1), "batches without an epoch (never stamped) prove nothing"


def test_records_below_the_position_are_skipped_and_handed_out_in_slices() -> None:
    completed = _fetch(_batch(0, 5, 1) + _batch(5, 5, 1), fetch_offset=3, high_watermark=10, next_offset=10)
    first = completed.take(position=3, max_records=4, last_leader_epoch=None)
    assert [r.offset for r in first.records] == [3, 4, 5, 6] and not first.exhausted
    assert first.records[0].key == b"k3" and first.records[0].headers == [("h", b"1")]
    assert first.records[0].leader_epoch == 1 and first.records[0].timestamp == TS + 3
    rest = completed.take(position=7, max_records=100, last_leader_epoch=1)
    assert [r.offset for r in rest.records] == [7, 8, 9] and rest.exhausted and rest.next_offset == 10


def test_nothing_at_or_above_the_high_watermark_is_handed_out() -> None:
    completed = _fetch(_batch(0, 5, 0), fetch_offset=0, high_watermark=3, next_offset=3)
    taken = completed.take(position=0, max_records=100, last_leader_epoch=None)
    assert [r.offset for r in taken.records] == [0, 1, 2] and taken.next_offset == 3


def test_an_older_epoch_after_a_newer_one_stops_at_the_divergence() -> None:
    completed = _fetch(_batch(0, 2, 4) + _batch(2, 2, 3), fetch_offset=0, high_watermark=4, next_offset=4)
    taken = completed.take(position=0, max_records=100, last_leader_epoch=None)
    assert [r.offset for r in taken.records] == [0, 1]
    assert taken.divergent_offset == 2 and not taken.exhausted
