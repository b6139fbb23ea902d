"""When a v2 read stops gathering (pure): ``fetch.min.bytes``, ``max_bytes``, the timeout, and
positions that move exactly over what the answer returns."""

from __future__ import annotations

from broker.groups.rest_gathering import Gathering
from broker.groups.rest_records import RenderedSpan, render_span
from broker.record.codec import RecordInput, encode_batch

A = ("orders", 0)
B = ("orders", 1)
TIME_LEFT_MS = 5000


def batch(base_offset: int, *values: bytes) -> bytes:
    """Records without keys, so each one counts exactly its value's length."""
    return encode_batch([RecordInput(None, value, (), 0) for value in values], base_offset=base_offset)


def fetched(gathering: Gathering, tp: tuple[str, int], data: bytes, high_watermark: int) -> None:
    """One fetch of ``tp`` from its cursor, rendered as the driver renders it."""
    span = render_span(
        tp[0],
        tp[1],
        data,
        gathering.cursors()[tp],
        high_watermark,
        "binary",
        gathering.budget_bytes,
        first_always_fits=not gathering.has_records,
    )
    gathering.add(tp, span)


def offsets(gathering: Gathering) -> list[tuple[int, int]]:
    return [(record["partition"], record["offset"]) for record in gathering.records()]


def test_without_min_bytes_the_first_record_ends_the_read() -> None:
    for min_bytes in (-1, 0):
        gathering = Gathering({A: 0}, min_bytes, 1000)
        assert not gathering.is_done(TIME_LEFT_MS), "nothing yet: wait"
        fetched(gathering, A, batch(0, b"x"), 1)
        assert gathering.is_done(TIME_LEFT_MS)
        assert offsets(gathering) == [(0, 0)]


def test_min_bytes_waits_until_the_gathered_keys_and_values_reach_it() -> None:
    gathering = Gathering({A: 0}, 10, 1000)
    fetched(gathering, A, batch(0, b"abc", b"def"), 2)
    assert gathering.size_bytes == 6
    assert not gathering.is_done(TIME_LEFT_MS), "6 of 10 bytes: keep gathering"
    assert gathering.cursors() == {A: 2}, "the next round starts after what was gathered"
    fetched(gathering, A, batch(2, b"ghij"), 3)
    assert gathering.size_bytes == 10
    assert gathering.is_done(TIME_LEFT_MS), "10 of 10 bytes"
    assert offsets(gathering) == [(0, 0), (0, 1), (0, 2)], "both rounds, in offset order"
    assert gathering.committable() == [("orders", 0, 3, "")], "auto-commit: after the last record returned"


def test_the_timeout_answers_with_what_was_gathered() -> None:
    gathering = Gathering({A: 0, B: 4}, 100, 1000)
    fetched(gathering, B, batch(4, b"small"), 5)
    assert not gathering.is_done(1)
    assert gathering.is_done(0)
    assert offsets(gathering) == [(1, 4)]
    assert gathering.committable() == [("orders", 1, 5, "")], "nothing committed for a partition that returned nothing"


def test_nothing_gathered_and_no_time_left_is_an_empty_answer() -> None:
    gathering = Gathering({A: 0}, -1, 1000)
    assert gathering.is_done(0)
    assert (gathering.records(), gathering.committable(), gathering.spans) == ([], [], {})


def test_a_record_past_max_bytes_ends_the_read_below_min_bytes() -> None:
    gathering = Gathering({A: 0, B: 0}, 100, 10)
    fetched(gathering, A, batch(0, b"123456", b"7890123"), 2)
    assert offsets(gathering) == [(0, 0)], "the second record would pass max_bytes"
    assert gathering.full and gathering.is_done(TIME_LEFT_MS), "nothing more can come, whatever min_bytes asks"
    assert gathering.cursors()[A] == 1, "the record left out is read next time"


def test_only_the_first_record_of_an_answer_may_pass_max_bytes() -> None:
    gathering = Gathering({A: 0, B: 0}, 100, 10)
    fetched(gathering, A, batch(0, b"x" * 30), 1)
    assert gathering.size_bytes == 30, "a large first record still comes, so it cannot stall a reader"
    assert gathering.is_done(TIME_LEFT_MS)
    other = Gathering({A: 0, B: 0}, 100, 10)
    fetched(other, A, batch(0, b"1234"), 1)
    fetched(other, B, batch(0, b"x" * 30), 1)
    assert offsets(other) == [(0, 0)], "another partition's record does not push the answer past max_bytes"
    assert other.full and other.size_bytes == 4


def test_partitions_are_answered_in_order_each_in_offset_order() -> None:
    gathering = Gathering({A: 0, B: 0}, 1000, 1000)
    fetched(gathering, B, batch(0, b"b0"), 1)
    fetched(gathering, A, batch(0, b"a0"), 1)
    fetched(gathering, B, batch(1, b"b1"), 2)
    assert offsets(gathering) == [(0, 0), (1, 0), (1, 1)]
    assert gathering.committable() == [("orders", 0, 1, ""), ("orders", 1, 2, "")]


def test_a_fetch_that_found_nothing_changes_nothing() -> None:
    gathering = Gathering({A: 3}, 10, 1000)
    fetched(gathering, A, b"", 3)
    assert (gathering.spans, gathering.cursors(), gathering.full) == ({}, {A: 3}, False)


def test_batches_consumed_without_records_move_the_cursor_but_commit_nothing() -> None:
    gathering = Gathering({A: 3}, 10, 1000)
    gathering.add(A, RenderedSpan([], 5, 0))
    assert gathering.cursors() == {A: 5}, "a control batch is not fetched again"
    assert gathering.spans[A].next_offset == 5, "the position moves past it"
    assert (gathering.committable(), gathering.is_done(TIME_LEFT_MS)) == ([], False)


def test_dropped_partitions_are_read_no_more_and_the_read_ends_with_none_left() -> None:
    gathering = Gathering({A: 0, B: 0}, 10, 1000)
    fetched(gathering, A, batch(0, b"abc"), 1)
    gathering.drop(A)
    assert gathering.cursors() == {B: 0}
    assert not gathering.is_done(TIME_LEFT_MS)
    gathering.drop(B)
    assert gathering.is_done(TIME_LEFT_MS), "nothing left to wait for"
    assert offsets(gathering) == [(0, 0)], "what a dropped partition gave stays in the answer"


def test_an_instance_that_owns_nothing_answers_at_once() -> None:
    assert Gathering({}, 10, 1000).is_done(TIME_LEFT_MS)
