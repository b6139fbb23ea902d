"""Partition choice, and how a produce request's records become batches within ``max.message.bytes``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.errors import UnknownPartition
from broker.partitioner import partition_for_key
from broker.record.codec import RecordInput
from broker.record.decode import decode_batch
from broker.server.json_records import EncodedRecord
from broker.server.produce_plan import PlacedRecord, RoundRobin, build_batches, choose_partition, split_by_size

NO_LIMIT = 1 << 30


def record(
    key: bytes | None = None, partition_id: int | None = None, value: bytes = b"v", ts: int = 1
) -> EncodedRecord:
    return EncodedRecord(RecordInput(key, value, [], ts), partition_id, None, None)


def test_explicit_partition_wins_over_the_key() -> None:
    assert choose_partition("t", record(b"k", 2), 3, RoundRobin()) == 2


def test_explicit_partition_out_of_range_is_unknown_partition() -> None:
    with pytest.raises(UnknownPartition) as raised:
        choose_partition("t", record(partition_id=3), 3, RoundRobin())
    assert raised.value.error_code == 40402
    assert raised.value.details["partition_id"] == 3


def test_keyed_records_follow_kafka_murmur2() -> None:
    for key in (b"a", b"user-17", b"\x00\x01"):
        assert choose_partition("t", record(key), 7, RoundRobin()) == partition_for_key(key, 7)


def test_keyless_records_go_round_robin_per_topic() -> None:
    round_robin = RoundRobin()
    chosen = [choose_partition("t", record(), 3, round_robin) for _ in range(6)]
    assert chosen == [0, 1, 2, 0, 1, 2]
    assert choose_partition("other", record(), 3, round_robin) == 0


def test_records_that_fit_together_make_one_batch_per_partition_in_request_order() -> None:
    placed = [
        PlacedRecord(0, 1, record(value=b"a", ts=10)),
        PlacedRecord(1, 0, record(value=b"b", ts=11)),
        PlacedRecord(2, 1, record(value=b"c", ts=12)),
    ]
    batches = build_batches(placed, NO_LIMIT)
    assert [(b.partition, b.slots, b.timestamps_ms) for b in batches] == [(0, [1], [11]), (1, [0, 2], [10, 12])]
    header, records = decode_batch(batches[1].batch)
    assert [r.value for r in records] == [b"a", b"c"]
    assert [r.offset for r in records] == [0, 1]
    assert header.records_count == 2


def placed_values(sizes: list[int], partition: int = 0) -> list[PlacedRecord]:
    return [PlacedRecord(slot, partition, record(value=b"x" * size, ts=1000 + slot)) for slot, size in enumerate(sizes)]


def encoded_size(items: list[PlacedRecord]) -> int:
    return len(build_batches(items, NO_LIMIT)[0].batch)


def test_a_partition_too_large_for_one_batch_is_split_into_full_batches() -> None:
    items = placed_values([5000] * 10)
    two_records = encoded_size(items[:2])
    batches = build_batches(items, two_records)
    assert [b.slots for b in batches] == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]
    assert all(len(b.batch) <= two_records for b in batches)
    assert [r.value for b in batches for r in decode_batch(b.batch)[1]] == [b"x" * 5000] * 10


def test_a_record_too_large_alone_gets_a_batch_of_its_own_and_neighbours_stay_together() -> None:
    items = placed_values([100, 100, 50_000, 100, 100])
    limit = 10_000
    batches = build_batches(items, limit)
    assert [b.slots for b in batches] == [[0, 1], [2], [3, 4]]
    assert [len(b.batch) > limit for b in batches] == [False, True, False]


def test_each_partition_is_split_on_its_own() -> None:
    items = placed_values([3000, 3000, 3000], partition=1) + [
        PlacedRecord(3 + i, 0, record(value=b"y" * 3000, ts=1)) for i in range(2)
    ]
    limit = encoded_size(items[:2])
    batches = build_batches(items, limit)
    assert [(b.partition, b.slots) for b in batches] == [(0, [3, 4]), (1, [0, 1]), (1, [2])]


def test_a_batch_holding_exactly_the_limit_is_not_split() -> None:
    items = placed_values([700] * 5)
    assert len(split_by_size(items, encoded_size(items))) == 1
    assert [len(run) for run in split_by_size(items, encoded_size(items) - 1)] == [4, 1]


@settings(max_examples=80, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=60),
    timestamps=st.lists(st.integers(0, 1 << 40), min_size=60, max_size=60),
    limit=st.integers(100, 12_000),
)
def test_splitting_keeps_order_and_every_batch_within_the_limit_and_as_full_as_it_can_be(
    sizes: list[int], timestamps: list[int], limit: int
) -> None:
    items = [PlacedRecord(slot, 0, record(value=b"v" * size, ts=timestamps[slot])) for slot, size in enumerate(sizes)]
    runs = split_by_size(items, limit)
    assert [item.slot for run in runs for item in run] == list(range(len(items)))
    for run, next_run in zip(runs, [*runs[1:], []]):
        size = encoded_size(run)
        assert size <= limit or len(run) == 1
        if next_run:
            assert encoded_size(run + next_run[:1]) > limit, "two neighbouring batches could have been one"
