"""Compaction of a log that holds transactions (``__consumer_offsets`` does, with TxnOffsetCommit).

An aborted transaction's record must never stand as the latest of its key (it would hide
the committed one, and readers drop it), and the markers must survive, or a replay of the
log would find transactions without an end and hold the last stable offset back for ever.
"""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from broker.record.codec import RecordInput, encode_batch
from broker.record.committed import kept_batches
from broker.record.decode import decode_batch
from broker.record.header import iter_batches
from broker.storage.cleaner import compact_log
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import whole_log
from tests.unit.storage.transaction_batches import marker_batch

NOW_MS = 1_700_000_000_000
P1, P2 = 1001, 1002


def keyed(key: str, value: str, producer_id: int = -1, sequence: int = 0) -> bytes:
    record = [RecordInput(key.encode(), value.encode(), (), NOW_MS)]
    if producer_id < 0:
        return encode_batch(record)
    return encode_batch(record, producer_id=producer_id, base_sequence=sequence, is_transactional=True)


def committed_view(log: PartitionLog) -> dict[str, str]:
    """Key -> latest value as a read_committed reader of the whole log sees it."""
    data = whole_log(log)
    aborted = [(t.producer_id, t.first_offset) for t in log.aborted_between(0, log.log_end_offset)]
    view: dict[str, str] = {}
    for header in kept_batches(data, aborted):
        _, records = decode_batch(data, header.position)
        for record in records:
            assert record.key is not None and record.value is not None
            view[record.key.decode()] = record.value.decode()
    return view


def test_an_aborted_record_never_replaces_a_committed_one_and_markers_stay(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=1, cleanup_policy="compact", retention_ms=-1)  # a segment per batch
    log = PartitionLog.open(tmp_path / "c-0", config, topic="c", partition=0)
    for batch in (
        keyed("k", "committed-1", P1),
        keyed("j", "committed-j", P1, sequence=1),
        marker_batch(P1, committed=True),
        keyed("k", "aborted", P2),
        keyed("j", "aborted", P2, sequence=1),
        marker_batch(P2, committed=False),
        keyed("k", "committed-2", P1, sequence=2),
        marker_batch(P1, committed=True),
        keyed("k", "plain"),
        keyed("z", "active"),
    ):
        log.append_as_leader(batch, 0, NOW_MS)
    before = committed_view(log)
    assert before == {"k": "plain", "j": "committed-j", "z": "active"}
    stats = compact_log(log, NOW_MS, log.log_end_offset)
    assert stats is not None and stats.records_removed == 4, "committed-1, committed-2, both aborted"
    assert committed_view(log) == before
    markers = [(h.base_offset, h.records_count) for h in iter_batches(whole_log(log)) if h.is_control]
    assert markers == [(2, 1), (5, 1), (7, 1)], "every marker kept whole"
    log.close()
    reopened = PartitionLog.open(tmp_path / "c-0", config, topic="c", partition=0, recovery_point=0)
    (tmp_path / "c-0" / "transactions.snapshot").unlink()
    replayed = PartitionLog.open(tmp_path / "c-0", config, topic="c", partition=0)
    for opened in (reopened, replayed):
        assert opened.transactions.open_transactions == []
        assert opened.transactions.last_stable_offset(opened.log_end_offset) == opened.log_end_offset
    reopened.close()


def test_the_cleaner_stops_at_the_oldest_open_transaction(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=1, cleanup_policy="compact", retention_ms=-1)
    log = PartitionLog.open(tmp_path / "c-0", config, topic="c", partition=0)
    for batch in (keyed("k", "old"), keyed("k", "older"), keyed("k", "open", P1), keyed("k", "newer"), keyed("z", "a")):
        log.append_as_leader(batch, 0, NOW_MS)
    stats = compact_log(log, NOW_MS, log.log_end_offset)
    assert stats is not None and stats.records_removed == 1, "only the segments below the open transaction"
    assert [h.records_count for h in iter_batches(whole_log(log))] == [0, 1, 1, 1, 1]


def test_a_cleaned_segment_keeps_its_aborted_transactions_anchored_in_its_new_content(tmp_path: Path) -> None:
    """The cleaner merges the segment's last two batches, so its ``.txnindex`` is written again: a reopen trusts it."""
    first_segment = [
        keyed("k", "committed-1", P1),
        marker_batch(P1, committed=True),
        keyed("j", "aborted", P2),
        marker_batch(P2, committed=False),
        keyed("a", "1"),
        keyed("b", "2"),
    ]
    config = LogConfig(segment_bytes=sum(map(len, first_segment)), cleanup_policy="compact", retention_ms=-1)
    directory = tmp_path / "c-0"
    log = PartitionLog.open(directory, config, topic="c", partition=0)
    for batch in (*first_segment, keyed("z", "active")):
        log.append_as_leader(batch, 0, NOW_MS)
    assert [segment.base_offset for segment in log.segments] == [0, 6]
    index = directory / f"{0:020d}.txnindex"
    anchored_before = index.read_bytes()
    stats = compact_log(log, NOW_MS, log.log_end_offset)
    assert stats is not None and stats.segments_cleaned == 1
    assert index.read_bytes() != anchored_before, "anchored in the merged last batch"
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted_between(0, 7)] == [(P2, 2, 3)]
    log.close()
    with capture_logs() as events:
        reopened = PartitionLog.open(directory, config, topic="c", partition=0)
    assert [e["transactions_replayed_from"] for e in events if e["event"] == "log.opened"] == [7], "nothing replayed"
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in reopened.aborted_between(0, 7)] == [(P2, 2, 3)]
    assert committed_view(reopened) == {"k": "committed-1", "a": "1", "b": "2", "z": "active"}
