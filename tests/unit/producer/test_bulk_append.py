"""The accumulator's bulk append, the columnar batch, and the time bound of back-pressure (all pure)."""

from __future__ import annotations

import random
from itertools import accumulate, pairwise

from broker.client.types import TopicPartition
from broker.record.decode import decode_batch
from broker.record.header import RECORD_BATCH_OVERHEAD
from producer.accumulator import BATCH_FULL, NEW_BATCH, RecordAccumulator
from producer.batch import estimate_record_bytes, record_estimates

TP = TopicPartition("t", 0)
TS = 1_700_000_000_000


def _accumulator(batch_size: int = 2_000, linger_ms: int = 5) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size, linger_ms=linger_ms, buffer_memory=10_000_000, delivery_timeout_ms=60_000
    )


def _drain_all(acc: RecordAccumulator) -> list:
    batches = []
    while (batch := acc.drain(TP)) is not None:
        batches.append(batch)
    return batches


def test_record_estimates_match_the_per_record_estimate() -> None:
    values = [b"v" * 10, None, b"x" * 500]
    keys = [None, b"key", b"k"]
    headers = [[], [("a", b"1"), ("b", None)], []]
    expected = [estimate_record_bytes(k, v, h) for k, v, h in zip(keys, values, headers, strict=True)]
    assert record_estimates(values, keys, headers) == expected
    assert record_estimates(values, None, None) == [estimate_record_bytes(None, v, []) for v in values]


def test_bulk_append_cuts_batches_exactly_where_one_by_one_appends_do() -> None:
    rng = random.Random(5)
    values = [rng.randbytes(rng.randint(0, 300)) for _ in range(500)]
    one_by_one = _accumulator()
    for value in values:
        one_by_one.append_record(TP, None, value, None, TS, estimate_record_bytes(None, value, []), None, 0)
    bulk = _accumulator()
    tokens: list[tuple[int, int]] = []
    sizes = record_estimates(values, None, None)
    bulk.append_many(TP, values, TS, None, None, list(accumulate(sizes)), lambda a, b: tokens.append((a, b)), 0)
    expected = [batch.records for batch in _drain_all(one_by_one)]
    batches = _drain_all(bulk)
    assert [batch.records for batch in batches] == expected
    assert len(expected) > 5
    assert all(batch.estimated_size_bytes <= 2_000 for batch in batches)
    assert tokens[0][0] == 0 and tokens[-1][1] == len(values)
    assert all(prev[1] == nxt[0] for prev, nxt in pairwise(tokens)), "chunks are contiguous"
    assert bulk.buffered_bytes == sum(sizes)


def test_bulk_append_fills_the_open_batch_first_and_flags_the_sender() -> None:
    acc = _accumulator(batch_size=RECORD_BATCH_OVERHEAD + 10 * estimate_record_bytes(None, b"v", []))
    assert acc.append_record(TP, None, b"v", None, TS, estimate_record_bytes(None, b"v", []), "one", 0) == NEW_BATCH
    values = [b"v"] * 4
    flags = acc.append_many(
        TP, values, TS, None, None, list(accumulate(record_estimates(values, None, None))), lambda a, b: "many", 0
    )
    assert flags == 0, "four more records fit the lingering batch: nothing new for the sender"
    values = [b"v"] * 10
    flags = acc.append_many(
        TP, values, TS, None, None, list(accumulate(record_estimates(values, None, None))), lambda a, b: (a, b), 0
    )
    assert flags == NEW_BATCH | BATCH_FULL
    first, second = _drain_all(acc)
    assert first.record_count == 10 and second.record_count == 5
    assert first.deliveries == ["one", "many", (0, 5)] and first.delivery_counts == [1, 4, 5]
    assert second.deliveries == [(5, 10)] and second.delivery_counts == [5]


def test_keys_and_headers_columns_appear_with_the_first_record_that_has_them() -> None:
    acc = _accumulator(batch_size=100_000)
    acc.append_record(TP, None, b"a", None, TS, 50, None, 0)
    acc.append_record(TP, None, b"b", None, TS + 1, 50, None, 0)
    values, keys, headers = [b"c", b"d"], [b"kc", None], [[("h", b"1")], []]
    acc.append_many(TP, values, TS + 2, keys, headers, [50, 100], lambda a, b: None, 0)
    batch = acc.drain(TP)
    assert batch is not None
    assert batch.keys == [None, None, b"kc", None]
    assert batch.deliveries == [None] and batch.delivery_counts == [4], "records nobody waits for share one entry"
    batch.stamp(producer_id=1, producer_epoch=0, base_sequence=0, compression=0)
    assert batch.encoded is not None
    _, records = decode_batch(batch.encoded)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in records] == [
        (None, b"a", [], TS),
        (None, b"b", [], TS + 1),
        (b"kc", b"c", [("h", b"1")], TS + 2),
        (None, b"d", [], TS + 2),
    ]


def test_the_time_bound_follows_the_partitions_oldest_unacknowledged_batch() -> None:
    acc = _accumulator(batch_size=100, linger_ms=5)
    other = TopicPartition("t", 1)
    acc.append_record(TP, None, b"v" * 60, None, TS, 90, None, now_ms=1_000)
    acc.append_record(TP, None, b"v" * 60, None, TS, 90, None, now_ms=1_040)
    acc.append_record(other, None, b"v" * 60, None, TS, 90, None, now_ms=1_100)
    assert not acc.queued_too_long(TP, now_ms=1_104, max_queue_ms=100)
    assert acc.queued_too_long(TP, now_ms=1_105, max_queue_ms=100), "1000 + linger 5 + 100"
    assert not acc.queued_too_long(other, now_ms=1_105, max_queue_ms=100), "an old partition holds back no other"
    first = acc.drain(TP)
    assert first is not None
    assert acc.queued_too_long(TP, now_ms=1_105, max_queue_ms=100), "sent but unacknowledged still counts"
    acc.deallocate(first)
    assert not acc.queued_too_long(TP, now_ms=1_105, max_queue_ms=100), "the next oldest is 1040"
    assert acc.queued_too_long(TP, now_ms=1_145, max_queue_ms=100)
    second = acc.drain(TP)
    assert second is not None
    acc.deallocate(second)
    assert not acc.queued_too_long(TP, now_ms=10_000, max_queue_ms=100), "nothing outstanding"
    assert acc.queued_too_long(other, now_ms=1_205, max_queue_ms=100)
