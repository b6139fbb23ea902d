"""A follower's inline fsyncs: one slow fsync among fast ones is tolerated, a slow disk or a stall is not."""

from __future__ import annotations

from broker.replica_io.inline_fsync import PAUSE_MS, SLOW_MS, STALL_MS, InlineFsyncGuard

NOW = 1_000


def test_fast_fsyncs_stay_on_the_loop() -> None:
    guard = InlineFsyncGuard()
    assert all(guard.record(0.3, NOW) is None for _ in range(100))
    assert guard.allows(NOW) and abs(guard.average_ms - 0.3) < 0.01


def test_an_occasional_slow_fsync_among_fast_ones_is_not_a_slow_disk() -> None:
    """The dev host's pattern: a 4 ms fsync every few seconds among ~0.3 ms ones."""
    guard = InlineFsyncGuard()
    for _ in range(10):
        for _ in range(20):
            assert guard.record(0.3, NOW) is None
        assert guard.record(4.0, NOW) is None
    assert guard.allows(NOW)


def test_a_disk_slow_on_average_pauses_inline_fsyncs() -> None:
    guard = InlineFsyncGuard()
    outcomes = [guard.record(4.0, NOW) for _ in range(4)]
    assert outcomes[:3] == [None, None, None]
    assert outcomes[3] is not None and outcomes[3] > SLOW_MS
    assert not guard.allows(NOW + PAUSE_MS - 1)
    assert guard.allows(NOW + PAUSE_MS)


def test_one_stall_pauses_at_once() -> None:
    guard = InlineFsyncGuard()
    assert guard.record(STALL_MS + 1, NOW) is not None
    assert not guard.allows(NOW)


def test_after_a_pause_one_more_slow_fsync_pauses_again_and_fast_ones_recover() -> None:
    slow_again = InlineFsyncGuard()
    slow_again.record(STALL_MS + 1, NOW)
    assert slow_again.record(4.0, NOW + PAUSE_MS) is not None
    recovering = InlineFsyncGuard()
    recovering.record(STALL_MS + 1, NOW)
    assert all(recovering.record(0.3, NOW + PAUSE_MS) is None for _ in range(20))
    assert recovering.average_ms < 0.5
