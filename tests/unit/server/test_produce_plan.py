"""Partition choice and the one-batch-per-partition rule of a produce request."""

from __future__ import annotations

import pytest

from broker.errors import UnknownPartition
from broker.partitioner import partition_for_key
from broker.record.codec import RecordInput, decode_batch
from broker.server.json_records import EncodedRecord
from broker.server.produce_plan import PlacedRecord, RoundRobin, build_batches, choose_partition


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


def test_one_batch_per_partition_in_request_order() -> None:
    placed = [
        PlacedRecord(0, 1, record(value=b"a", ts=10)),
        PlacedRecord(1, 0, record(value=b"b", ts=11)),
        PlacedRecord(2, 1, record(value=b"c", ts=12)),
    ]
    batches = build_batches(placed)
    assert [(b.partition, b.slots, b.timestamps_ms) for b in batches] == [(0, [1], [11]), (1, [0, 2], [10, 12])]
    header, records = decode_batch(batches[1].batch)
    assert [r.value for r in records] == [b"a", b"c"]
    assert [r.offset for r in records] == [0, 1]
    assert header.records_count == 2
