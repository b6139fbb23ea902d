"""The REST Proxy v2 instance rules (pure): positions, seek, subscribe/assign exclusion, idle expiry,
persistence through ``__consumer_offsets`` replay, and the HW-bounded rendering of records."""

from __future__ import annotations

import base64
import json

import pytest

from broker.groups.offsets_records import OffsetKey, OffsetValue
from broker.groups.rest_instances import (
    InstanceConfig,
    InstanceKey,
    RestInstance,
    RestInstanceError,
    start_offset,
)
from broker.groups.rest_records import render_span
from broker.groups.shard import OffsetsShard
from broker.record.codec import RecordInput, encode_batch

TP = ("orders", 0)


def instance(**config) -> RestInstance:
    return RestInstance("g", "i", InstanceConfig(**config), last_used_ms=1000)


def code_of(call) -> tuple[int, int]:
    with pytest.raises(RestInstanceError) as raised:
        call()
    return raised.value.http_status, raised.value.error_code


def test_start_offset_prefers_position_then_commit_then_reset() -> None:
    assert start_offset(7, 3, 0, 10, "earliest") == 7
    assert start_offset(None, 3, 0, 10, "latest") == 3
    assert start_offset(None, None, 2, 10, "earliest") == 2
    assert start_offset(None, None, 2, 10, "latest") == 10


def test_out_of_range_position_or_commit_falls_to_the_reset_policy() -> None:
    assert start_offset(50, 3, 0, 10, "earliest") == 0, "a position past the HW is not read from"
    assert start_offset(None, 1, 5, 10, "latest") == 10, "a commit below the log start is out of range"
    assert start_offset(10, None, 0, 10, "earliest") == 10, "the HW itself is a valid position (nothing yet)"


def test_reset_none_refuses_instead_of_guessing() -> None:
    assert code_of(lambda: start_offset(None, None, 0, 10, "none")) == (409, 40903)
    assert start_offset(None, 4, 0, 10, "none") == 4


def test_subscription_and_manual_assignment_exclude_each_other() -> None:
    subscribed = instance()
    subscribed.subscribe(["orders"], None)
    assert code_of(lambda: subscribed.assign(frozenset({TP}))) == (409, 40903)
    assigned = instance()
    assigned.assign(frozenset({TP}))
    assert code_of(lambda: assigned.subscribe(["orders"], None)) == (409, 40903)
    assert assigned.subscription is None and assigned.assignment == frozenset({TP}), "refusal changed nothing"


def test_subscribe_takes_exactly_one_of_topics_and_a_valid_pattern() -> None:
    fresh = instance()
    assert code_of(lambda: fresh.subscribe(None, None)) == (400, 40001)
    assert code_of(lambda: fresh.subscribe(["a"], "b.*")) == (400, 40001)
    assert code_of(lambda: fresh.subscribe(None, "(")) == (400, 40001)
    assert fresh.subscription is None
    fresh.subscribe(None, "ord.*")
    assert fresh.subscription is not None and fresh.subscription.regex == "ord.*"


def test_seek_only_on_an_owned_partition() -> None:
    owned = frozenset({TP})
    consumer = instance()
    assert code_of(lambda: consumer.seek(owned, ("orders", 1), 3)) == (409, 40903)
    consumer.seek(owned, TP, 3)
    assert consumer.positions == {TP: 3}


def test_advance_is_forward_only_and_loses_to_a_seek_made_meanwhile() -> None:
    consumer = instance()
    assert consumer.advance(TP, 0, 5)
    assert consumer.positions[TP] == 5
    consumer.seek(frozenset({TP}), TP, 2)
    assert not consumer.advance(TP, 5, 9), "a read that started at 5 must not undo the seek to 2"
    assert consumer.positions[TP] == 2
    assert not consumer.advance(TP, 2, 1)
    assert consumer.positions[TP] == 2


def test_a_commit_names_the_next_offset_to_read() -> None:
    consumer = instance()
    consumer.positions = {("orders", 1): 9, TP: 4}
    assert consumer.commit_offsets(None) == [("orders", 0, 4, ""), ("orders", 1, 9, "")]
    assert consumer.commit_offsets([("orders", 0, 6, "m")]) == [("orders", 0, 7, "m")], "the last consumed, plus one"
    assert consumer.commit_offsets([]) == []


def test_positions_of_partitions_no_longer_owned_are_forgotten() -> None:
    consumer = instance()
    consumer.positions = {TP: 4, ("orders", 1): 9}
    consumer.retain_positions({("orders", 1)})
    assert consumer.positions == {("orders", 1): 9}
    consumer.unsubscribe()
    assert consumer.positions == {}


def test_idle_after_the_instance_timeout_and_not_before() -> None:
    consumer = instance(instance_timeout_ms=500)
    assert not consumer.is_idle(1500)
    assert consumer.is_idle(1501)
    consumer.touch(1400)
    assert not consumer.is_idle(1900)
    consumer.touch(100)
    assert consumer.last_used_ms == 1400, "a late clock reading never moves the idle clock back"


def test_instance_key_is_no_offset_key_and_the_reverse() -> None:
    key = InstanceKey("g", "i").encode()
    assert OffsetKey.decode(key) is None
    assert InstanceKey.decode(OffsetKey("g", "t", 0).encode()) is None
    assert InstanceKey.decode(key) == InstanceKey("g", "i")
    assert InstanceKey.decode(b"\xff") is None


def test_replay_rebuilds_config_and_subscription_but_not_positions() -> None:
    shard = OffsetsShard(0, 1)
    subscribed = instance(format="json", auto_offset_reset="earliest", auto_commit=False, instance_timeout_ms=900)
    subscribed.subscribe(None, "ord.*")
    subscribed.positions[TP] = 12
    assigned = RestInstance("g", "manual", InstanceConfig(), 0)
    assigned.assign(frozenset({TP, ("orders", 3)}))
    shard.apply_record(0, OffsetKey("g", "orders", 0).encode(), OffsetValue(5, "", 1).encode())
    shard.apply_record(1, InstanceKey("g", "i").encode(), subscribed.record_value())
    shard.apply_record(2, InstanceKey("g", "manual").encode(), assigned.record_value())
    shard.touch_instances(7000)
    state = shard.groups["g"]
    replayed = state.rest_instances["i"]
    assert replayed.config == subscribed.config
    assert replayed.subscription == subscribed.subscription
    assert replayed.positions == {}, "positions are not persisted: reads resume at the committed offset"
    assert replayed.last_used_ms == 7000, "the idle clock starts at load"
    assert state.rest_instances["manual"].assignment == assigned.assignment
    assert state.offsets[TP].offset == 5
    shard.apply_record(3, InstanceKey("g", "i").encode(), None)
    assert set(state.rest_instances) == {"manual"}


def test_a_group_with_only_an_instance_is_not_empty() -> None:
    shard = OffsetsShard(0, 1)
    shard.apply_record(0, InstanceKey("g", "i").encode(), instance().record_value())
    assert not shard.groups["g"].is_empty
    assert shard.existing_group("g") is not None


def _batch(base_offset: int, values: list[bytes | None]) -> bytes:
    return encode_batch([RecordInput(b"k", v, (), 0) for v in values], base_offset=base_offset)


def test_render_stops_at_the_high_watermark() -> None:
    data = _batch(0, [b'"a"', b'"b"', b'"c"', b'"d"'])
    span = render_span("t", 0, data, 0, 2, "json", 1 << 20)
    assert [r["offset"] for r in span.records] == [0, 1]
    assert span.next_offset == 2, "never past the HW"
    assert not span.full, "stopping at the HW is not running out of budget"


def test_render_skips_records_before_the_start_and_respects_the_byte_budget() -> None:
    data = _batch(0, [b'"a"', b'"b"', b'"c"', b'"d"'])
    span = render_span("t", 3, data, 1, 4, "json", 8)
    assert [(r["offset"], r["value"], r["partition"]) for r in span.records] == [(1, "b", 3), (2, "c", 3)]
    assert span.next_offset == 3 and span.size_bytes == 8 and span.full


def test_a_record_larger_than_the_budget_still_comes_alone() -> None:
    span = render_span("t", 0, _batch(0, [b"x" * 100, b"y"]), 0, 2, "binary", 10)
    assert len(span.records) == 1
    assert base64.b64decode(span.records[0]["value"]) == b"x" * 100
    assert span.records[0]["key"] == base64.b64encode(b"k").decode()


def test_json_format_falls_back_to_text_for_bytes_that_are_not_json() -> None:
    span = render_span("t", 0, _batch(0, [b"plain", b'{"n": 1}', None]), 0, 3, "json", 1 << 20)
    assert [r["value"] for r in span.records] == ["plain", {"n": 1}, None]
    assert json.dumps(span.records)


def test_nothing_to_render_leaves_the_position() -> None:
    span = render_span("t", 0, b"", 5, 5, "json", 100)
    assert (span.records, span.next_offset) == ([], 5)
