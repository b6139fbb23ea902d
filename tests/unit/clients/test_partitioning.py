"""Keyed records land where Kafka's Java client puts them; unkeyed ones stick, then move on a send."""

from __future__ import annotations

import random

import pytest

from producer.partitioner import StickyPartitioner

JAVA_MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("key", "murmur2"), JAVA_MURMUR2)
def test_keyed_records_use_kafkas_murmur2_over_all_partitions(key: bytes, murmur2: int) -> None:
    partitioner = StickyPartitioner(random.Random(1))
    for count in (1, 3, 7, 12):
        expected = (murmur2 & 0x7FFFFFFF) % count
        assert partitioner.partition("t", key, count, available=[0]) == expected


def test_unkeyed_records_stick_to_one_partition_until_a_batch_is_sent() -> None:
    partitioner = StickyPartitioner(random.Random(7))
    available = [0, 1, 2, 3]
    first = partitioner.partition("t", None, 4, available)
    assert {partitioner.partition("t", None, 4, available) for _ in range(100)} == {first}
    partitioner.on_batch_sent("t", (first + 1) % 4, available)
    assert partitioner.partition("t", None, 4, available) == first, "a send of another partition changes nothing"
    partitioner.on_batch_sent("t", first, available)
    second = partitioner.partition("t", None, 4, available)
    assert second != first and second in available


def test_sticky_partitions_spread_over_available_partitions_only() -> None:
    partitioner = StickyPartitioner(random.Random(3))
    available = [1, 3]
    seen = set()
    for _ in range(50):
        current = partitioner.partition("t", None, 4, available)
        seen.add(current)
        partitioner.on_batch_sent("t", current, available)
    assert seen == {1, 3}


def test_topics_stick_independently() -> None:
    partitioner = StickyPartitioner(random.Random(5))
    a = partitioner.partition("a", None, 8, list(range(8)))
    b = partitioner.partition("b", None, 8, list(range(8)))
    partitioner.on_batch_sent("a", a, list(range(8)))
    assert partitioner.partition("b", None, 8, list(range(8))) == b
