"""RecordAccumulator: batching by size, readiness by linger, flush, buffer memory."""

from __future__ import annotations

from broker.client.types import TopicPartition
from broker.record.codec import RecordInput
from broker.record.decode import decode_batch
from broker.record.header import RECORD_BATCH_OVERHEAD
from producer.accumulator import RecordAccumulator
from producer.batch import estimate_record_bytes

TP0 = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)


def _accumulator(batch_size: int = 1000, linger_ms: int = 50, buffer_memory: int = 100_000) -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=batch_size, linger_ms=linger_ms, buffer_memory=buffer_memory, delivery_timeout_ms=10_000
    )


def _append(acc: RecordAccumulator, tp: TopicPartition, value: bytes, now_ms: int, token: object = None):
    size = estimate_record_bytes(None, value, [])
    return acc.append(tp, RecordInput(None, value, [], 1_700_000_000_000), size, token, now_ms)


def test_records_share_a_batch_until_it_would_outgrow_batch_size() -> None:
    acc = _accumulator(batch_size=RECORD_BATCH_OVERHEAD + 3 * estimate_record_bytes(None, b"x" * 50, []))
    results = [_append(acc, TP0, b"x" * 50, now_ms=0) for _ in range(7)]
    assert [r.new_batch for r in results] == [True, False, False, True, False, False, True]
    assert results[2].batch_full
    first, second, third = (acc.drain(TP0) for _ in range(3))
    assert first is not None and second is not None and third is not None
    assert (first.record_count, second.record_count, third.record_count) == (3, 3, 1)
    assert acc.drain(TP0) is None


def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own() -> None:
    acc = _accumulator(batch_size=100)
    _append(acc, TP0, b"small", now_ms=0)
    big = _append(acc, TP0, b"y" * 500, now_ms=0)
    assert big.new_batch and big.batch.record_count == 1 and big.batch.sealed


def test_a_batch_lingers_until_linger_ms_then_is_ready() -> None:
    acc = _accumulator(linger_ms=50)
    _append(acc, TP0, b"a", now_ms=1000)
    _append(acc, TP1, b"b", now_ms=1020)
    early = acc.ready(now_ms=1030)
    assert early.partitions == [] and early.next_check_ms == 1050
    assert acc.ready(now_ms=1050).partitions == [TP0]
    later = acc.ready(now_ms=1070)
    assert sorted(later.partitions) == [TP0, TP1] and later.next_check_ms is None


def test_a_full_batch_is_ready_before_linger_ends() -> None:
    acc = _accumulator(batch_size=RECORD_BATCH_OVERHEAD + 2 * estimate_record_bytes(None, b"v", []), linger_ms=10_000)
    _append(acc, TP0, b"v", now_ms=0)
    assert acc.ready(now_ms=1).partitions == []
    _append(acc, TP0, b"v", now_ms=1)
    assert acc.ready(now_ms=2).partitions == [TP0]


def test_flush_makes_every_batch_ready_at_once() -> None:
    acc = _accumulator(linger_ms=10_000)
    _append(acc, TP0, b"a", now_ms=0)
    acc.begin_flush()
    assert acc.ready(now_ms=1).partitions == [TP0]
    acc.end_flush()
    assert acc.ready(now_ms=1).partitions == []


def test_buffer_memory_is_held_until_the_batch_is_deallocated() -> None:
    size = estimate_record_bytes(None, b"z" * 100, [])
    acc = _accumulator(buffer_memory=2 * size)
    _append(acc, TP0, b"z" * 100, now_ms=0)
    _append(acc, TP1, b"z" * 100, now_ms=0)
    assert not acc.has_room(size)
    batch = acc.drain(TP0)
    assert batch is not None
    assert not acc.has_room(size), "a drained batch still holds memory until it is answered"
    acc.deallocate(batch)
    assert acc.has_room(size) and acc.buffered_bytes == size
    acc.deallocate(batch)
    assert acc.buffered_bytes == size, "deallocating twice must not free memory twice"


def test_unsent_batches_expire_after_delivery_timeout() -> None:
    acc = _accumulator()
    _append(acc, TP0, b"old", now_ms=0)
    _append(acc, TP1, b"new", now_ms=5_000)
    assert acc.expire(now_ms=9_999) == []
    expired = acc.expire(now_ms=10_000)
    assert [b.tp for b in expired] == [TP0]
    assert acc.has_unsent()


def test_deliveries_follow_records_and_a_stamped_batch_decodes_with_its_sequence() -> None:
    acc = _accumulator()
    for index in range(3):
        _append(acc, TP0, f"v{index}".encode(), now_ms=0, token=index)
    batch = acc.drain(TP0)
    assert batch is not None
    assert batch.deliveries == [0, 1, 2]
    batch.stamp(producer_id=7, producer_epoch=2, base_sequence=40, compression=0)
    assert batch.encoded is not None
    header, records = decode_batch(batch.encoded)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert [r.value for r in records] == [b"v0", b"v1", b"v2"]


def test_estimate_bounds_the_encoded_size() -> None:
    record = RecordInput(b"key" * 10, b"v" * 3000, [("h", b"x" * 20), ("trace", None)], 1_700_000_000_000)
    acc = _accumulator(batch_size=1 << 20)
    acc.append(TP0, record, estimate_record_bytes(record.key, record.value, list(record.headers)), None, 0)
    batch = acc.drain(TP0)
    assert batch is not None
    batch.stamp(-1, -1, -1, 0)
    assert batch.encoded is not None
    assert len(batch.encoded) <= batch.estimated_size_bytes
