"""Kafka's murmur2 partitioner, against the Java client's own test vectors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2  # type: ignore[import-untyped]

from broker.partitioner import murmur2, partition_for_key, to_positive

JAVA_UTILS_TEST_MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
    (bytes([12, 42, 56, 24, 109, 111]), 274204207),
]


@pytest.mark.parametrize(("key", "expected"), JAVA_UTILS_TEST_MURMUR2)
def test_murmur2_matches_kafka_utils(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@pytest.mark.parametrize(("key", "expected"), JAVA_UTILS_TEST_MURMUR2)
def test_partition_for_key_clears_the_sign_bit_then_takes_the_modulus(key: bytes, expected: int) -> None:
    for num_partitions in (1, 3, 12, 1000):
        assert partition_for_key(key, num_partitions) == (expected & 0x7FFFFFFF) % num_partitions


def test_to_positive_is_not_abs() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-973932308) == 1173551340
    assert to_positive(5) == 5


def test_empty_key_mixes_only_the_seed() -> None:
    # 0x9747b28c ^ 0, then the final avalanche; kafka-python's port gives the same.
    assert murmur2(b"") == 275646681


@given(st.binary(max_size=64))
def test_murmur2_agrees_with_an_independent_port(key: bytes) -> None:
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key)
    assert -(1 << 31) <= murmur2(key) < (1 << 31)


@given(st.binary(max_size=16), st.integers(1, 500))
def test_partition_is_in_range_and_stable(key: bytes, num_partitions: int) -> None:
    partition = partition_for_key(key, num_partitions)
    assert 0 <= partition < num_partitions
    assert partition_for_key(bytearray(key), num_partitions) == partition


@pytest.mark.parametrize("num_partitions", [0, -3])
def test_partition_count_must_be_positive(num_partitions: int) -> None:
    with pytest.raises(ValueError, match="num_partitions must be positive"):
        partition_for_key(b"k", num_partitions)
