"""A partition replica holds one open file per segment (its ``.log``): indexes are opened only to be written.

Why it matters: a broker with 10 000 partition replicas needs 10 000 descriptors, not
30 000, so it fits a default open-files limit (``highwater bench scale`` sizes its
limit from ``scale_plan.FILES_PER_REPLICA``).
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.bench.scale_plan import FILES_PER_REPLICA
from broker.record.codec import encode_batch
from broker.storage.log import PartitionLog
from broker.storage.log_config import LogConfig


def _open_descriptors(under: Path) -> int:
    """This process's descriptors open on files under ``under``: counting every descriptor counted
    whatever else the process opened or closed meanwhile (a collected socket of an earlier test)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:
            continue
        count += target.startswith(f"{under}/")
    return count


def test_each_segment_holds_one_descriptor_and_a_closed_log_none(tmp_path: Path) -> None:
    assert _open_descriptors(tmp_path) == 0
    logs = [
        PartitionLog.open(
            tmp_path / f"t-{n}", LogConfig(segment_bytes=4096, index_interval_bytes=128), topic="t", partition=n
        )
        for n in range(20)
    ]
    assert _open_descriptors(tmp_path) == 20 * FILES_PER_REPLICA == 20
    for _ in range(40):
        logs[0].append_as_leader(encode_batch([(None, b"x" * 300)]), leader_epoch=0, now_ms=1)
    logs[0].flush()
    segments = len(logs[0].segments)
    assert segments > 2, "the appends rolled segments: their indexes were written and fsynced"
    assert _open_descriptors(tmp_path) == 19 + segments
    for log in logs:
        log.close()
    assert _open_descriptors(tmp_path) == 0


def test_indexes_written_through_short_lived_descriptors_read_back_after_a_restart(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=4096, index_interval_bytes=128)
    log = PartitionLog.open(tmp_path / "t-0", config, topic="t", partition=0)
    for _ in range(40):
        log.append_as_leader(encode_batch([(None, b"x" * 300)]), leader_epoch=0, now_ms=1)
    log.flush()
    entries = len(log.segments[0].index)
    assert entries > 0
    expected = log.read(20, 1 << 20).data
    log.close()
    reopened = PartitionLog.open(tmp_path / "t-0", config, topic="t", partition=0)
    try:
        assert len(reopened.segments[0].index) == entries
        assert reopened.segments[0].index.existed
        assert reopened.read(20, 1 << 20).data == expected, "the read found its start through the index"
    finally:
        reopened.close()
