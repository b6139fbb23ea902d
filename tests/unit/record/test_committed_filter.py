"""What a read_committed reader keeps of an answer, given the aborted transactions it lists (Kafka's consumer rule)."""

from __future__ import annotations

from broker.record.committed import committed_bytes, format_aborted, kept_batches, parse_aborted
from broker.record.header import iter_batches
from tests.unit.storage.transaction_batches import data_batch, laid_out, marker_batch

P1, P2 = 1001, 1002


def kept_bases(data: bytes, aborted: list[tuple[int, int]]) -> list[int]:
    return [header.base_offset for header in kept_batches(data, aborted)]


def test_aborted_records_and_every_marker_are_dropped_the_rest_kept() -> None:
    data, bases = laid_out(
        data_batch(-1),  # 0 plain
        data_batch(P1, 2),  # 1-2 aborted
        data_batch(P2),  # 3 committed
        marker_batch(P1, committed=False),  # 4
        marker_batch(P2, committed=True),  # 5
        data_batch(-1),  # 6
    )
    assert kept_bases(data, [(P1, 1)]) == [bases[0], bases[2], bases[5]]


def test_without_aborted_transactions_only_markers_go() -> None:
    data, bases = laid_out(data_batch(P1), marker_batch(P1, committed=True), data_batch(-1))
    assert kept_bases(data, []) == [bases[0], bases[2]]


def test_one_producer_aborting_twice_and_committing_between() -> None:
    data, bases = laid_out(
        data_batch(P1),  # 0 aborted
        marker_batch(P1, committed=False),  # 1
        data_batch(P1, sequence=1),  # 2 committed
        marker_batch(P1, committed=True),  # 3
        data_batch(P1, sequence=2),  # 4 aborted
        marker_batch(P1, committed=False),  # 5
    )
    assert kept_bases(data, [(P1, 0), (P1, 4)]) == [bases[2]]


def test_an_abort_that_began_before_the_answer_drops_its_records_in_it() -> None:
    """The answer starts mid-transaction: the listed first offset lies before its first batch."""
    data, bases = laid_out(data_batch(P1, sequence=3), data_batch(-1), marker_batch(P1, committed=False), start=10)
    assert kept_bases(data, [(P1, 7)]) == [bases[1]]


def test_the_header_form_round_trips() -> None:
    pairs = ((P1, 0), (P2, 17), (P1, 40))
    assert parse_aborted(format_aborted(pairs)) == pairs
    assert parse_aborted("") == () and parse_aborted(None) == ()


def test_committed_bytes_are_the_kept_batches_back_to_back() -> None:
    data, bases = laid_out(data_batch(-1), data_batch(P1), marker_batch(P1, committed=False), data_batch(P2))
    kept = committed_bytes(data, [(P1, bases[1])])
    assert [header.base_offset for header in iter_batches(kept)] == [bases[0], bases[3]]
