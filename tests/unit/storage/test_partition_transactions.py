"""The pure transaction state of a partition: open transactions, the last stable offset, the aborted ones."""

from __future__ import annotations

from broker.storage.transactions import AbortedTransaction, PartitionTransactions
from tests.unit.storage.transaction_batches import data_batch, feed, marker_batch

P1, P2, P3 = 1001, 1002, 1003


def test_plain_records_leave_everything_stable() -> None:
    transactions = PartitionTransactions()
    end = feed(transactions, data_batch(-1, 5), 0)
    assert transactions.last_stable_offset(end) == end == 5
    assert transactions.open_transactions == []


def test_an_open_transaction_holds_the_last_stable_offset_at_its_first_offset() -> None:
    transactions = PartitionTransactions()
    offset = feed(transactions, data_batch(-1, 3), 0)
    offset = feed(transactions, data_batch(P1, 2), offset)
    offset = feed(transactions, data_batch(-1, 4), offset)
    offset = feed(transactions, data_batch(P1, 2, sequence=2), offset)
    assert offset == 11
    assert transactions.last_stable_offset(11) == 3
    assert transactions.last_stable_offset(2) == 2, "never above the high watermark"
    assert [txn.first_offset for txn in transactions.open_transactions] == [3]


def test_a_marker_decides_only_once_the_high_watermark_passes_it() -> None:
    """A leader that dies before its followers hold the marker leaves the transaction open there."""
    transactions = PartitionTransactions()
    offset = feed(transactions, data_batch(P1, 2), 0)
    marker_offset = offset
    offset = feed(transactions, marker_batch(P1, committed=True), offset)
    assert transactions.open_transactions == []
    assert transactions.last_stable_offset(marker_offset) == 0, "marker not yet below the HW"
    assert transactions.last_stable_offset(offset) == offset


def test_the_oldest_open_transaction_of_many_bounds_the_last_stable_offset() -> None:
    transactions = PartitionTransactions()
    offset = feed(transactions, data_batch(P1, 1), 0)
    offset = feed(transactions, data_batch(P2, 1), offset)
    offset = feed(transactions, data_batch(P3, 1), offset)
    offset = feed(transactions, marker_batch(P1, committed=True), offset)
    assert transactions.last_stable_offset(offset) == 1
    offset = feed(transactions, marker_batch(P2, committed=False), offset)
    assert transactions.last_stable_offset(offset) == 2
    offset = feed(transactions, marker_batch(P3, committed=True), offset)
    assert transactions.last_stable_offset(offset) == offset == 6


def test_an_abort_is_handed_out_with_the_stable_offset_after_it() -> None:
    transactions = PartitionTransactions()
    aborted: list[AbortedTransaction] = []
    offset = feed(transactions, data_batch(P1, 2), 0, aborted)  # 0-1
    offset = feed(transactions, data_batch(P2, 1), offset, aborted)  # 2
    offset = feed(transactions, marker_batch(P1, committed=False), offset, aborted)  # 3
    offset = feed(transactions, marker_batch(P2, committed=False), offset, aborted)  # 4
    assert aborted == [
        AbortedTransaction(P1, 0, 3, last_stable_offset=2),
        AbortedTransaction(P2, 2, 4, last_stable_offset=5),
    ]
    assert offset == 5


def test_a_commit_is_not_handed_out_and_a_stray_marker_changes_nothing() -> None:
    transactions = PartitionTransactions()
    aborted: list[AbortedTransaction] = []
    offset = feed(transactions, data_batch(P1, 2), 0, aborted)
    offset = feed(transactions, marker_batch(P1, committed=True), offset, aborted)
    offset = feed(transactions, marker_batch(P2, committed=False), offset, aborted)
    assert aborted == []
    assert transactions.last_stable_offset(offset) == offset


def test_a_producer_transacts_again_after_its_marker() -> None:
    transactions = PartitionTransactions()
    offset = feed(transactions, data_batch(P1, 1), 0)
    offset = feed(transactions, marker_batch(P1, committed=True), offset)
    second = offset
    offset = feed(transactions, data_batch(P1, 1, epoch=1), offset)
    opened = transactions.open_transaction(P1)
    assert opened is not None and (opened.first_offset, opened.producer_epoch) == (second, 1)
    transactions.on_high_watermark(offset)
    offset = feed(transactions, marker_batch(P1, committed=True, epoch=1), offset)
    assert [txn.first_offset for txn in transactions.unreplicated] == [second], "the first is below the HW noted"
