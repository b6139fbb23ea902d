from hypothesis import given
from hypothesis import strategies as st

from broker.groups.offsets_records import (
    OffsetKey,
    OffsetValue,
    java_string_hashcode,
    kafka_abs,
    partition_for_group,
)


def test_java_hashcode_known_values() -> None:
    # Values of "...".hashCode() computed by the JVM.
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("a") == 97
    assert java_string_hashcode("hello") == 99162322
    assert java_string_hashcode("polygenelubricants") == -2147483648
    assert java_string_hashcode("\u00e9t\u00e9") == 0xE9 * 31 * 31 + ord("t") * 31 + 0xE9


def test_kafka_abs_maps_min_int_to_zero() -> None:
    assert kafka_abs(-(1 << 31)) == 0
    assert kafka_abs(-5) == 5
    assert partition_for_group("polygenelubricants", 50) == 0


def test_group_partition_matches_kafka_formula() -> None:
    # "hello".hashCode() = 99162322 -> 99162322 % 50 = 22
    assert partition_for_group("hello", 50) == 22


@given(st.text(max_size=40), st.integers(min_value=1, max_value=100))
def test_partition_in_range(group_id: str, count: int) -> None:
    assert 0 <= partition_for_group(group_id, count) < count


@given(st.text(max_size=30), st.text(max_size=30), st.integers(min_value=0, max_value=10_000))
def test_key_round_trip_and_same_bytes(group_id: str, topic: str, partition: int) -> None:
    key = OffsetKey(group_id, topic, partition)
    assert OffsetKey.decode(key.encode()) == key
    assert OffsetKey(group_id, topic, partition).encode() == key.encode()


def test_value_round_trip_and_foreign_keys_skipped() -> None:
    value = OffsetValue(42, "meta", 1_700_000_000_000)
    assert OffsetValue.decode(value.encode()) == value
    assert OffsetKey.decode(b"not json") is None
    assert OffsetKey.decode(b'{"v":99,"group":"g"}') is None
