"""A partition log keeps its transactions with its batches: through appends, truncation, close, reopen and retention."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from broker.errors import OffsetOutOfRange
from broker.record.header import read_header
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from broker.storage.transaction_snapshot import SNAPSHOT_FILE, write_snapshot
from broker.storage.transactions import AbortedTransaction, OpenTransaction, PartitionTransactions
from tests.unit.storage.helpers import open_log
from tests.unit.storage.transaction_batches import NOW_MS, data_batch, marker_batch

P1, P2 = 1001, 1002
EPOCH = 1


def append(log: PartitionLog, *batches: bytes) -> list[int]:
    return [log.append_as_leader(batch, EPOCH, NOW_MS).base_offset for batch in batches]


def aborted(log: PartitionLog) -> list[AbortedTransaction]:
    """Every aborted transaction with records in the log, as a ``read_committed`` read of all of it is told."""
    return log.aborted_between(log.log_start_offset, log.log_end_offset)


def opened_with(directory: Path, config: LogConfig | None = None) -> tuple[PartitionLog, int]:
    """Open the log; and the offset its transactions were replayed from (its end: nothing replayed)."""
    with capture_logs() as events:
        log = open_log(directory, config)
    (opened,) = [event for event in events if event["event"] == "log.opened"]
    return log, opened["transactions_replayed_from"]


def test_appends_open_and_close_transactions_in_the_log(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, data_batch(P1, 2), data_batch(-1), data_batch(P2), marker_batch(P1, committed=False))
    assert [(txn.producer_id, txn.first_offset) for txn in log.transactions.open_transactions] == [(P2, 3)]
    assert [(txn.producer_id, txn.first_offset, txn.last_offset) for txn in aborted(log)] == [(P1, 0, 4)]
    assert log.transactions.last_stable_offset(log.log_end_offset) == 3


def test_a_truncation_that_cuts_a_marker_reopens_its_transaction(log_dir: Path) -> None:
    """A follower cut back to its leader's log: the transaction is open there, so it is here again."""
    log = open_log(log_dir)
    _, marker = append(log, data_batch(P1, 2), marker_batch(P1, committed=False))
    log.truncate_to(marker)
    assert [txn.first_offset for txn in log.transactions.open_transactions] == [0]
    assert aborted(log) == []
    log.truncate_to(0)
    assert log.transactions.open_transactions == []


def test_a_clean_close_lets_the_next_open_skip_the_replay(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, data_batch(P1), data_batch(P2), marker_batch(P2, committed=False))
    log.close()
    reopened, replayed_from = opened_with(log_dir)
    assert replayed_from == reopened.log_end_offset == 3, "nothing replayed"
    assert [txn.producer_id for txn in reopened.transactions.open_transactions] == [P1]
    assert [txn.producer_id for txn in aborted(reopened)] == [P2]


def test_a_snapshot_is_trusted_only_for_the_log_end_and_last_batch_it_names(log_dir: Path) -> None:
    log = open_log(log_dir)
    marker = marker_batch(P1, committed=True)
    append(log, data_batch(P1), marker)
    log.close()
    planted = PartitionTransactions.restored([OpenTransaction(P2, 0, 0, NOW_MS)], [])
    last_batch = dataclasses.replace(read_header(marker), base_offset=1, partition_leader_epoch=EPOCH)
    write_snapshot(log_dir, 2, last_batch, planted, [])
    trusted, replayed_from = opened_with(log_dir)
    assert replayed_from == 2 and trusted.transactions.open_transactions == [OpenTransaction(P2, 0, 0, NOW_MS)]
    trusted.close()
    write_snapshot(log_dir, 2, None, planted, [])
    checked, replayed_from = opened_with(log_dir)
    assert replayed_from == 0 and checked.transactions.open_transactions == []


def test_a_torn_tail_cut_by_recovery_is_replayed_not_taken_from_the_snapshot(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, data_batch(P1, 3), marker_batch(P1, committed=False))
    log.close()
    segment = log_dir / f"{0:020d}.log"
    os.truncate(segment, segment.stat().st_size - 5)  # the marker torn by a crash
    recovered, replayed_from = opened_with(log_dir)
    assert replayed_from == 0
    assert recovered.log_end_offset == 3
    assert [txn.first_offset for txn in recovered.transactions.open_transactions] == [0]


def test_a_damaged_snapshot_file_means_a_replay(log_dir: Path) -> None:
    log = open_log(log_dir)
    append(log, data_batch(P1))
    log.close()
    path = log_dir / SNAPSHOT_FILE
    path.write_bytes(path.read_bytes()[:-3])
    reopened, replayed_from = opened_with(log_dir)
    assert replayed_from == 0 and [txn.producer_id for txn in reopened.transactions.open_transactions] == [P1]


def test_retention_keeps_every_segment_from_the_oldest_open_transaction_on(log_dir: Path) -> None:
    one_batch = len(data_batch(P1))
    log = open_log(log_dir, LogConfig(segment_bytes=one_batch, retention_ms=0))
    append(log, data_batch(-1), data_batch(P1), data_batch(-1), data_batch(-1))
    assert len(log.segments) == 4
    end = log.log_end_offset
    log.delete_retained_segments(NOW_MS + 60_000, end)
    assert log.log_start_offset == 1, "the open transaction's segment and those after it stay"
    append(log, marker_batch(P1, committed=True))
    log.delete_retained_segments(NOW_MS + 60_000, log.log_end_offset)
    assert log.log_start_offset == 4, "decided: only the active segment is left"


def test_after_a_crash_only_the_segments_past_the_last_roll_are_replayed(log_dir: Path) -> None:
    """Each roll leaves a snapshot at the new segment's base; nothing is closed before the reopen."""
    one_batch = len(data_batch(P1))
    config = LogConfig(segment_bytes=one_batch * 2)
    log = open_log(log_dir, config)
    append(log, data_batch(P1), data_batch(-1), marker_batch(P1, committed=False), data_batch(P2), data_batch(-1))
    assert [segment.base_offset for segment in log.segments] == [0, 2, 3]
    crashed, replayed_from = opened_with(log_dir, config)
    assert replayed_from == 3, "from the snapshot the last roll wrote"
    assert [(t.producer_id, t.first_offset) for t in crashed.transactions.open_transactions] == [(P2, 3)]
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted(crashed)] == [(P1, 0, 2)]


def test_a_truncation_across_rolled_segments_rebuilds_the_transactions(log_dir: Path) -> None:
    one_batch = len(data_batch(P1))
    log = open_log(log_dir, LogConfig(segment_bytes=one_batch * 2))
    append(log, data_batch(P1), data_batch(-1), data_batch(P2), data_batch(-1), marker_batch(P2, committed=True))
    with capture_logs() as events:
        log.truncate_to(4)
    assert [e for e in events if e["event"] == "log.truncated"]
    assert [(t.producer_id, t.first_offset) for t in log.transactions.open_transactions] == [(P1, 0), (P2, 2)]


TWO_BATCHES = LogConfig(segment_bytes=2 * len(marker_batch(P1, committed=False)))
"""Two of these batches fill a segment; a third rolls it."""


def index_files(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob("*.txnindex"))


def test_a_rolled_segment_keeps_its_aborted_transactions_in_its_index_file(log_dir: Path) -> None:
    """Memory holds the active segment's only; a segment without an abort has no file."""
    log = open_log(log_dir, TWO_BATCHES)
    append(log, data_batch(P1), marker_batch(P1, committed=False))  # segment 0: P1 aborted
    append(log, data_batch(P2), marker_batch(P2, committed=True))  # segment 2: committed
    append(log, data_batch(P1, epoch=1), data_batch(-1))  # segment 4: P1 open again
    append(log, marker_batch(P1, committed=False, epoch=1))  # segment 6, active: P1 aborted
    assert [segment.base_offset for segment in log.segments] == [0, 2, 4, 6]
    assert index_files(log_dir) == [f"{0:020d}.txnindex"]
    assert [segment.txn_index.active_entries for segment in log.segments[:-1]] == [[], [], []]
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.segments[-1].txn_index.active_entries] == [
        (P1, 4, 6)
    ]
    assert [(t.producer_id, t.first_offset) for t in aborted(log)] == [(P1, 0), (P1, 4)]
    assert [t.first_offset for t in log.aborted_between(4, 6)] == [4], "found in the segment holding the marker"
    assert log.aborted_between(2, 4) == []


def test_a_reopen_reads_the_rolled_segments_indexes_and_replays_only_past_the_last_roll(log_dir: Path) -> None:
    config = TWO_BATCHES
    log = open_log(log_dir, config)
    append(log, data_batch(P1), marker_batch(P1, committed=False), data_batch(P2), marker_batch(P2, committed=False))
    append(log, data_batch(P1, epoch=1))
    before = aborted(log)
    crashed, replayed_from = opened_with(log_dir, config)
    assert replayed_from == 4, "the rolled segments' aborts come from their files"
    assert aborted(crashed) == before and len(before) == 2


def test_a_damaged_index_file_means_a_whole_replay_that_writes_it_again(log_dir: Path) -> None:
    config = TWO_BATCHES
    log = open_log(log_dir, config)
    append(log, data_batch(P1), marker_batch(P1, committed=False), data_batch(-1))
    log.close()
    path = log_dir / f"{0:020d}.txnindex"
    good = path.read_bytes()
    path.write_bytes(good[:-1])
    with capture_logs() as events:
        reopened = open_log(log_dir, config)
    assert [e["transactions_replayed_from"] for e in events if e["event"] == "log.opened"] == [0]
    assert [e for e in events if e["event"] == "log.transaction_index_unverified"]
    assert path.read_bytes() == good
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted(reopened)] == [(P1, 0, 1)]


def test_a_truncation_into_a_rolled_segment_takes_its_index_back_into_memory(log_dir: Path) -> None:
    log = open_log(log_dir, dataclasses.replace(TWO_BATCHES, segment_bytes=TWO_BATCHES.segment_bytes * 3 // 2))
    append(log, data_batch(P1), marker_batch(P1, committed=False), data_batch(P2))  # segment 0
    append(log, data_batch(-1), marker_batch(P2, committed=False))  # segment 3
    assert index_files(log_dir) == [f"{0:020d}.txnindex"]
    log.truncate_to(2)
    assert [segment.base_offset for segment in log.segments] == [0]
    assert index_files(log_dir) == [], "the segment is active again: its index is in memory"
    assert [(t.producer_id, t.last_offset) for t in log.segments[0].txn_index.active_entries] == [(P1, 1)]
    assert [(t.producer_id, t.first_offset) for t in aborted(log)] == [(P1, 0)]
    log.truncate_to(1)
    assert aborted(log) == [] and [t.producer_id for t in log.transactions.open_transactions] == [P1]


def test_retention_deletes_a_segments_index_with_it(log_dir: Path) -> None:
    log = open_log(log_dir, dataclasses.replace(TWO_BATCHES, retention_ms=0))
    append(log, data_batch(P1), marker_batch(P1, committed=False), data_batch(-1), data_batch(-1))
    assert index_files(log_dir) == [f"{0:020d}.txnindex"]
    log.delete_retained_segments(NOW_MS + 60_000, log.log_end_offset)
    assert log.log_start_offset == 2 and index_files(log_dir) == []
    assert aborted(log) == []


def test_a_search_whose_index_file_retention_deleted_meanwhile_is_out_of_range(log_dir: Path) -> None:
    """A reader holds the segments as they were before retention ran; their index file is gone under it."""
    log = open_log(log_dir, TWO_BATCHES)
    append(log, data_batch(P1), marker_batch(P1, committed=False), data_batch(-1))
    (log_dir / f"{0:020d}.txnindex").unlink()
    with pytest.raises(OffsetOutOfRange, match="deleted by retention"):
        log.aborted_between(0, 2)
