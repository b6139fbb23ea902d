"""The aborted-transactions benchmark runs end to end on a small log, and what it prints holds together."""

from pathlib import Path

from broker.bench.txn_index import bench_txn_index
from broker.storage.transaction_index import ENTRY


def test_the_bench_measures_a_log_whose_aborts_live_in_their_segments_files(tmp_path: Path) -> None:
    figures = bench_txn_index(tmp_path / "bench-0", aborts=400, segment_bytes=64 * 1024, records_per_txn=2)
    assert figures.aborts == 400 and figures.segments > 3
    assert 0 < figures.held_bytes < figures.all_in_memory_bytes / 3, "memory holds the active segment's only"
    assert figures.file_bytes >= (400 - figures.aborts_in_active) * ENTRY.size
    assert figures.search_rolled_us > 0 and figures.search_active_us > 0
    assert figures.open_clean_s > 0 and figures.open_full_replay_s > 0
    assert 0 < figures.slowest_append_ms < figures.fill_s * 1000
    assert len(figures.lines()) == 5
