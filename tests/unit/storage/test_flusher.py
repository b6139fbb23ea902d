import asyncio
import contextlib
from pathlib import Path

import pytest

from broker.storage.flusher import GroupCommitFlusher, IntervalFlusher
from broker.storage.log_config import LogConfig
from tests.unit.storage.helpers import make_batch, open_log


async def test_concurrent_flushes_are_group_committed(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(flush_policy="fsync"))
    flusher = GroupCommitFlusher()
    loop = asyncio.get_running_loop()
    fsyncs_before = log.fsync_count

    async def produce(i: int) -> tuple[int, int]:
        info = await loop.run_in_executor(None, log.append_as_leader, make_batch(1, tag=i), 0, 0)
        await flusher.flush(log)
        return info.last_offset, log.recovery_point

    results = await asyncio.gather(*(produce(i) for i in range(50)))
    for last_offset, recovery_point in results:
        assert recovery_point > last_offset  # each caller's append was fsynced before it returned
    fsyncs = log.fsync_count - fsyncs_before
    assert 1 <= fsyncs < 25
    assert log.recovery_point == log.log_end_offset == 50


async def test_a_flush_waits_for_an_fsync_that_started_after_it(log_dir: Path) -> None:
    log = open_log(log_dir)
    flusher = GroupCommitFlusher()
    log.append_as_leader(make_batch(1), 0, 0)
    first = asyncio.create_task(flusher.flush(log))
    await asyncio.sleep(0)  # the first fsync is now under way
    log.append_as_leader(make_batch(1), 0, 0)
    await flusher.flush(log)  # must not be satisfied by the fsync already running
    assert log.recovery_point == 2
    await first


async def test_interval_flusher_flushes_only_due_interval_logs(tmp_path: Path) -> None:
    now = [0]
    interval = open_log(tmp_path / "interval-0", LogConfig(flush_policy="interval", flush_interval_ms=1000))
    lazy = open_log(tmp_path / "lazy-0", LogConfig(flush_policy="os"))
    flusher = IntervalFlusher(clock_ms=lambda: now[0])
    flusher.watch(interval)
    flusher.watch(lazy)
    for log in (interval, lazy):
        log.append_as_leader(make_batch(1), 0, 0)
    assert await flusher.flush_due() == 0  # interval not yet elapsed
    now[0] = 999
    assert await flusher.flush_due() == 0
    now[0] = 1000
    assert await flusher.flush_due() == 1
    assert (interval.recovery_point, lazy.recovery_point) == (1, 0)
    now[0] = 5000
    assert await flusher.flush_due() == 0  # nothing new to flush


async def test_interval_flusher_runs_in_the_background(log_dir: Path) -> None:
    log = open_log(log_dir, LogConfig(flush_policy="interval", flush_interval_ms=20))
    flusher = IntervalFlusher(tick_ms=5)
    flusher.watch(log)
    flusher.start()
    log.append_as_leader(make_batch(1), 0, 0)
    for _ in range(200):
        if log.recovery_point == 1:
            break
        await asyncio.sleep(0.01)
    await flusher.stop()
    assert log.recovery_point == 1


async def test_interval_flusher_follows_the_policy_of_each_watched_log_and_drops_closed_ones(tmp_path: Path) -> None:
    now = [0]
    first = open_log(tmp_path / "first-0", LogConfig(flush_policy="interval", flush_interval_ms=100))
    later = open_log(tmp_path / "later-0", LogConfig(flush_policy="os"))
    flusher = IntervalFlusher(clock_ms=lambda: now[0])
    flusher.watch(first)
    flusher.watch(later)
    for log in (first, later):
        log.append_as_leader(make_batch(1), 0, 0)
    now[0] = 500
    assert await flusher.flush_due() == 1, "only the interval-policy log is flushed"
    assert (first.recovery_point, later.recovery_point) == (1, 0)
    later.update_config(LogConfig(flush_policy="interval", flush_interval_ms=100))
    flusher.watch(later)
    now[0] = 599
    assert await flusher.flush_due() == 0, "a log switched to the interval policy waits its own interval"
    now[0] = 600
    assert await flusher.flush_due() == 1
    assert later.recovery_point == 1
    first.update_config(LogConfig(flush_policy="os"))
    flusher.watch(first)
    first.append_as_leader(make_batch(1), 0, 0)
    later.append_as_leader(make_batch(1), 0, 0)
    later.close()
    now[0] = 5_000
    assert await flusher.flush_due() == 0, "switched away from the interval policy, or closed: not flushed"
    assert first.recovery_point == 1
    assert flusher._last_flush_ms == {}, "the closed log is dropped"


async def test_a_flush_after_a_cancelled_driver_waits_for_a_new_fsync(log_dir: Path) -> None:
    """Regression: a cancelled driver cancelled the next fsync's future but left it as the one
    to join, so a later caller failed with CancelledError at once and the next driver died
    answering it (InvalidStateError), found by the seeded simulation."""
    log = open_log(log_dir)
    flusher = GroupCommitFlusher()
    log.append_as_leader(make_batch(1), 0, 0)
    first = asyncio.create_task(flusher.flush(log))
    await asyncio.sleep(0)
    queued = asyncio.create_task(flusher.flush(log))
    await asyncio.sleep(0)
    (driver,) = [task for task in asyncio.all_tasks() if task.get_name() == "group-commit-orders-0"]
    driver.cancel()
    for cancelled in (first, queued):
        with contextlib.suppress(asyncio.CancelledError):
            await cancelled
    log.append_as_leader(make_batch(1), 0, 0)
    running = asyncio.create_task(flusher.flush(log))
    await asyncio.sleep(0)
    log.append_as_leader(make_batch(1), 0, 0)
    await flusher.flush(log)
    await running
    assert log.recovery_point == 3


async def test_a_driver_cancelled_before_its_first_step_leaves_no_caller_waiting(log_dir: Path) -> None:
    """A driver cancelled before it ran never ran its ``finally``: its caller waited for ever on a future
    nobody would resolve, and so did every later caller of the log (the test above hung that way)."""
    log = open_log(log_dir)
    flusher = GroupCommitFlusher()
    log.append_as_leader(make_batch(1), 0, 0)
    waiting = asyncio.create_task(flusher.flush(log))
    await asyncio.sleep(0)
    (driver,) = [task for task in asyncio.all_tasks() if task.get_name() == "group-commit-orders-0"]
    driver.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiting, 5)
    log.append_as_leader(make_batch(1), 0, 0)
    await asyncio.wait_for(flusher.flush(log), 5)
    assert log.recovery_point == 2
