"""The storage benchmark's leader loop: what the disk is asked per append and per group commit."""

from pathlib import Path

import pytest

from broker.bench.storage import LEADER_BATCH_RECORDS, bench_leader


@pytest.mark.parametrize("record_count", [LEADER_BATCH_RECORDS, 1])
async def test_the_leader_loop_costs_one_write_per_append_and_one_fsync_per_group_commit(
    tmp_path: Path, record_count: int
) -> None:
    figure = await bench_leader(tmp_path / "bench-0", record_count, seconds=0.2, appenders=2)
    assert figure.appends > 0 and figure.flushes > 0
    assert figure.records == figure.appends * record_count
    # Besides: the leader-epoch checkpoint written at the first append, one write and two fsyncs (file,
    # directory), and the first flush of the new log making its directory entries durable (its directory
    # and the data directory: creation itself fsyncs nothing).
    assert figure.syscalls.writes == figure.appends + 1
    assert figure.syscalls.fsyncs == figure.flushes + 4
