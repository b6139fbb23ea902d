"""Offsets committed inside a transaction (TxnOffsetCommit): pending until the producer's marker.

Live (``apply_marker`` after the leader wrote the marker) and on a new coordinator's
replay of ``__consumer_offsets`` from a real log, markers included.
"""

from __future__ import annotations

from pathlib import Path

from broker.groups.coordinator import _replay
from broker.groups.offsets_records import OffsetKey, OffsetValue
from broker.groups.shard import OffsetsShard
from broker.record.codec import RecordInput, encode_batch
from tests.unit.replica_io.disk_partition import LEADER_EPOCH, leadership, partition_on_disk
from tests.unit.storage.transaction_batches import NOW_MS, marker_batch

GROUP = "ctp"
P1, P2 = 1001, 1002
TP = ("orders", 0)


def offset_record(offset: int) -> tuple[bytes, bytes]:
    return OffsetKey(GROUP, *TP).encode(), OffsetValue(offset, "", NOW_MS).encode()


def test_a_commit_marker_applies_the_pending_offsets_and_an_abort_drops_them() -> None:
    shard = OffsetsShard(0, 1)
    shard.apply_record(10, *offset_record(5))
    shard.apply_record(11, *offset_record(9), producer_id=P1)
    shard.apply_record(12, *offset_record(7), producer_id=P2)
    state = shard.groups[GROUP]
    assert state.offsets[TP].offset == 5, "pending until the marker"
    assert shard.apply_marker(P2, committed=False) == []
    assert state.offsets[TP].offset == 5 and P2 not in state.pending
    [(group, tp, sample)] = shard.apply_marker(P1, committed=True)
    assert (group, tp, sample.offset, state.offsets[TP].offset) == (GROUP, TP, 9, 9)
    assert state.pending == {}


def test_a_group_with_only_pending_offsets_is_not_empty() -> None:
    shard = OffsetsShard(0, 1)
    shard.apply_record(3, *offset_record(4), producer_id=P1)
    assert not shard.groups[GROUP].is_empty


def transactional_offsets(producer_id: int, offset: int) -> bytes:
    key, value = offset_record(offset)
    return encode_batch([RecordInput(key, value, (), NOW_MS)], producer_id=producer_id, is_transactional=True)


def test_a_new_coordinator_replays_pending_offsets_and_their_markers(tmp_path: Path) -> None:
    partition = partition_on_disk(tmp_path, broker_id=1)
    partition.apply_record(leadership(1, replicas=[1]), min_insync_replicas=1)
    log = partition.log
    key, value = offset_record(2)
    for batch in (
        encode_batch([RecordInput(key, value, (), NOW_MS)]),
        transactional_offsets(P1, 6),
        transactional_offsets(P2, 8),
        marker_batch(P1, committed=True),
        marker_batch(P2, committed=False),
        transactional_offsets(P1, 11),
    ):
        log.append_as_leader(batch, LEADER_EPOCH, NOW_MS)
    shard = OffsetsShard(0, LEADER_EPOCH)
    assert _replay(partition, shard, 0) == log.log_end_offset
    state = shard.groups[GROUP]
    assert state.offsets[TP].offset == 6, "P1's committed, P2's aborted"
    assert state.pending == {P1: {TP: state.pending[P1][TP]}} and state.pending[P1][TP].offset == 11
