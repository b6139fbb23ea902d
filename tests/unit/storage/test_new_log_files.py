"""The files a new log creates: only its ``.log`` until the segment is first sealed.

Creating 10 000 partition replicas used to create 30 000 files (and read back two empty
ones each); a new segment's index files now wait for its first seal (a roll, a whole
flush or a close), and a log reopened after that finds them and trusts them.
"""

from pathlib import Path

from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import make_batch, open_log

CONFIG = LogConfig(segment_bytes=2_000, index_interval_bytes=100)


def _files(log_dir: Path) -> set[str]:
    return {path.name for path in log_dir.iterdir()}


def test_a_new_log_creates_only_its_segment_file(log_dir: Path) -> None:
    log = open_log(log_dir, CONFIG)
    log.append_as_leader(make_batch(2, value_bytes=60), 0, 0)
    log.flush()
    assert _files(log_dir) == {"00000000000000000000.log", "leader-epoch-checkpoint"}


def test_closing_a_new_log_writes_both_indexes_and_a_reopen_trusts_them(log_dir: Path) -> None:
    log = open_log(log_dir, CONFIG)
    for i in range(8):
        log.append_as_leader(make_batch(2, value_bytes=60, tag=i), 0, 0)
    entries = len(log.segments[-1].index)
    log.close()
    assert {"00000000000000000000.index", "00000000000000000000.timeindex"} <= _files(log_dir)
    reopened = open_log(log_dir, CONFIG).segments[-1]
    assert reopened.indexes_consistent()
    assert entries > 0 and len(reopened.index) == entries


def test_an_empty_new_log_closes_with_empty_indexes(log_dir: Path) -> None:
    log = open_log(log_dir, CONFIG)
    log.close()
    assert (log_dir / "00000000000000000000.index").stat().st_size == 0
    assert (log_dir / "00000000000000000000.timeindex").stat().st_size == 0


def test_a_roll_writes_the_sealed_segments_indexes(log_dir: Path) -> None:
    log = open_log(log_dir, CONFIG)
    i = 0
    while len(log.segments) == 1:
        log.append_as_leader(make_batch(2, value_bytes=60, tag=i), 0, 0)
        i += 1
    sealed = log.segments[0]
    assert sealed.index.path.exists() and sealed.time_index.path.exists()
    assert sealed.index.path.stat().st_size == len(sealed.index) * 8
