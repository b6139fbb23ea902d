"""Burrow's rules, one by one, in their order of precedence."""

from broker.groups.lag_status import (
    ERR,
    OK,
    REWIND,
    STALL,
    STOP,
    STOP_FLOOR_MS,
    WARN,
    CommitSample,
    group_status,
    partition_status,
)


def window(*points: tuple[int, int, int | None]) -> list[CommitSample]:
    return [CommitSample(offset, commit_ms, lag) for offset, commit_ms, lag in points]


def test_zero_current_lag_is_always_ok() -> None:
    rewound = window((50, 0, 5), (10, 1000, 40))
    assert partition_status(rewound, 0, 10**9) == OK


def test_offsets_going_back_is_rewind() -> None:
    assert partition_status(window((50, 0, 5), (10, 1000, 40)), 40, 1500) == REWIND


def test_no_commit_for_longer_than_the_window_span_is_stop() -> None:
    samples = window((10, 0, 5), (20, 40_000, 5), (30, 80_000, 5))
    assert partition_status(samples, 5, 80_000 + 80_001) == STOP
    assert partition_status(samples, 5, 80_000 + 79_000) != STOP
    single = window((10, 0, 5))
    assert partition_status(single, 5, STOP_FLOOR_MS - 1) == OK
    assert partition_status(single, 5, STOP_FLOOR_MS + 1) == STOP


def test_lag_zero_somewhere_in_the_window_is_ok() -> None:
    assert partition_status(window((10, 0, 0), (10, 1000, 7), (10, 2000, 9)), 9, 2500) == OK


def test_same_offset_with_lag_is_stall() -> None:
    assert partition_status(window((10, 0, 3), (10, 1000, 5), (10, 2000, 9)), 9, 2500) == STALL


def test_progress_with_lag_never_falling_is_warn() -> None:
    assert partition_status(window((10, 0, 3), (20, 1000, 5), (30, 2000, 5)), 5, 2500) == WARN
    assert partition_status(window((10, 0, 9), (20, 1000, 5), (30, 2000, 6)), 6, 2500) == OK


def test_unknown_sample_lags_do_not_count_as_zero() -> None:
    assert partition_status(window((10, 0, None), (20, 1000, 5), (30, 2000, 8)), 8, 2500) == WARN


def test_never_committed_partition() -> None:
    assert partition_status([], None, 0, nothing_to_read=True) == OK
    assert partition_status([], None, 0, nothing_to_read=False) == STOP


def test_group_status_is_the_worst() -> None:
    assert group_status([OK, OK]) == OK
    assert group_status([OK, WARN]) == WARN
    for bad in (STOP, STALL, REWIND):
        assert group_status([WARN, bad, OK]) == ERR
