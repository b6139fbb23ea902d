"""A segment's aborted-transactions index: the search, the file, and when the file is trusted."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from broker.storage.file_scan import ScannedBatch
from broker.storage.transaction_index import (
    HEADER,
    READ_CHUNK_ENTRIES,
    TransactionIndex,
    collect_aborted,
)
from broker.storage.transactions import AbortedTransaction, PartitionTransactions
from tests.unit.storage.transaction_batches import at, data_batch, feed, marker_batch

P1, P2, P3 = 1001, 1002, 1003
LAST = ScannedBatch(4096, at(marker_batch(P1, committed=False), 40))
"""A segment's last batch, as its index is anchored in it."""


def found(entries: list[AbortedTransaction], start: int, end: int) -> list[int]:
    result: list[AbortedTransaction] = []
    collect_aborted(entries, start, end, result)
    return [txn.producer_id for txn in result]


def three_aborts_in_a_row() -> list[AbortedTransaction]:
    """P1: 0-1, marker 2; P2: 3-4, marker 5; P3: 6-7, marker 8."""
    transactions, offset = PartitionTransactions(), 0
    aborted: list[AbortedTransaction] = []
    for producer in (P1, P2, P3):
        offset = feed(transactions, data_batch(producer, 2), offset, aborted)
        offset = feed(transactions, marker_batch(producer, committed=False), offset, aborted)
    return aborted


def test_the_search_finds_the_overlapping_ones_and_stops_early() -> None:
    aborted = three_aborts_in_a_row()
    assert found(aborted, 0, 9) == [P1, P2, P3]
    assert found(aborted, 3, 5) == [P2]
    assert found(aborted, 2, 3) == [P1], "its marker is in the range"
    assert found(aborted, 9, 20) == []
    result: list[AbortedTransaction] = []
    assert collect_aborted(aborted, 0, 4, result), "P2's stable offset reaches 4: no later segment can matter"
    assert not collect_aborted(aborted, 0, 20, result), "nothing here says a later segment holds none"


def test_a_long_transaction_spanning_a_later_abort_is_found() -> None:
    """P1 opens first and aborts last; a read of the range after P2's abort still needs P1."""
    transactions = PartitionTransactions()
    aborted: list[AbortedTransaction] = []
    offset = feed(transactions, data_batch(P1, 1), 0, aborted)  # 0
    offset = feed(transactions, data_batch(P2, 1), offset, aborted)  # 1
    offset = feed(transactions, marker_batch(P2, committed=False), offset, aborted)  # 2
    offset = feed(transactions, data_batch(P1, 1, sequence=1), offset, aborted)  # 3
    offset = feed(transactions, marker_batch(P1, committed=False), offset, aborted)  # 4
    assert found(aborted, 1, 3) == [P2, P1]
    assert found(aborted, 3, 4) == [P1]


def test_a_rolled_segment_with_aborts_has_a_file_and_nothing_in_memory(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    for txn in three_aborts_in_a_row():
        index.append(txn)
    index.persist(LAST)
    assert index.path.exists() and index.active_entries == []
    assert index.entries() == three_aborts_in_a_row()
    with pytest.raises(RuntimeError, match="rolled segment"):
        index.append(three_aborts_in_a_row()[0])


def test_a_rolled_segment_without_aborts_has_no_file(tmp_path: Path) -> None:
    index = TransactionIndex(tmp_path / "00000000000000000000.txnindex")
    index.path.write_bytes(b"left from a segment since cut")
    index.persist(LAST)
    assert not index.path.exists()
    assert index.entries() == []
    assert index.collect(0, 100, []) is False


def test_a_file_is_trusted_only_whole_and_anchored_in_its_segment(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    written = TransactionIndex(path)
    written.persist(LAST, three_aborts_in_a_row())
    good = path.read_bytes()
    assert TransactionIndex(path).verify(LAST)
    reloaded = TransactionIndex(path)
    reloaded.verify(LAST)
    assert reloaded.entries() == three_aborts_in_a_row() and reloaded.active_entries == []
    rewritten = ScannedBatch(LAST.position, dataclasses.replace(LAST.header, partition_leader_epoch=7))
    assert not TransactionIndex(path).verify(rewritten), "the segment was cut and regrown under another leader"
    assert not TransactionIndex(path).verify(ScannedBatch(LAST.position + 1, LAST.header)), "another last batch"
    assert not TransactionIndex(path).verify(None), "the segment is empty now"
    path.write_bytes(good[:-7])
    assert not TransactionIndex(path).verify(LAST), "torn"
    flipped = bytearray(good)
    flipped[HEADER.size + 3] ^= 1
    path.write_bytes(bytes(flipped))
    assert not TransactionIndex(path).verify(LAST), "a bit flipped in an entry"
    path.unlink()
    missing = TransactionIndex(path)
    assert missing.verify(LAST) and missing.entries() == [], "no file: no aborted transactions"


def test_a_search_of_the_file_answers_as_one_in_memory(tmp_path: Path) -> None:
    """Hundreds of entries, so a search crosses the file's read chunks; random ranges, both ways alike."""
    rng = random.Random(8)
    transactions, offset = PartitionTransactions(), 0
    aborted: list[AbortedTransaction] = []
    producers = [P1, P2, P3, 1004, 1005]
    while len(aborted) < READ_CHUNK_ENTRIES * 2 + 17:
        producer = rng.choice(producers)
        if transactions.open_transaction(producer) is not None and rng.random() < 0.4:
            offset = feed(transactions, marker_batch(producer, committed=rng.random() < 0.3), offset, aborted)
        else:
            offset = feed(transactions, data_batch(producer, rng.randint(1, 3)), offset, aborted)
    in_memory = TransactionIndex(tmp_path / "a.txnindex")
    on_disk = TransactionIndex(tmp_path / "b.txnindex")
    for txn in aborted:
        in_memory.append(txn)
    on_disk.persist(LAST, aborted)
    for _ in range(300):
        start = rng.randrange(offset)
        end = rng.randrange(start, offset + 1)
        from_memory: list[AbortedTransaction] = []
        from_file: list[AbortedTransaction] = []
        complete = in_memory.collect(start, end, from_memory)
        assert on_disk.collect(start, end, from_file) == complete
        assert from_file == from_memory
        assert from_memory == [txn for txn in aborted if txn.last_offset >= start and txn.first_offset < end]
