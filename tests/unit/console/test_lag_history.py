"""Lag samples: bounded rings per group, and each principal's cut of a sample (pure)."""

from __future__ import annotations

from broker.console.lag_history import LagHistory, LagSample, PartitionLag


def sample(time_ms: int, *lags: tuple[str, int, int]) -> LagSample:
    return LagSample(
        time_ms,
        tuple(PartitionLag(topic, 0, 100, 100 + lag, lag, lag_ms) for topic, lag, lag_ms in lags),
    )


def test_a_group_keeps_at_most_capacity_samples_oldest_first() -> None:
    history = LagHistory(capacity=3)
    for step in range(5):
        history.record("g", sample(step, ("t", step, 0)))
    assert [s.time_ms for s in history.samples("g")] == [2, 3, 4]
    assert history.samples("absent") == []


def test_retain_forgets_the_groups_not_named() -> None:
    history = LagHistory(capacity=3)
    history.record("kept", sample(0))
    history.record("moved", sample(0))
    history.retain(["kept"])
    assert len(history.samples("kept")) == 1
    assert history.samples("moved") == []


def test_totals_count_only_the_topics_the_reader_may_see() -> None:
    body = sample(7, ("seen", 5, 300), ("hidden", 1000, 99_000)).body(lambda topic: topic == "seen")
    assert body == {
        "time_ms": 7,
        "total_lag": 5,
        "max_lag_ms": 300,
        "partitions": [
            {
                "topic_name": "seen",
                "partition_id": 0,
                "committed_offset": 100,
                "high_watermark": 105,
                "lag": 5,
                "lag_ms": 300,
            }
        ],
    }


def test_a_commit_beyond_the_high_watermark_adds_no_lag_and_an_unknown_age_counts_as_zero() -> None:
    ahead = LagSample(1, (PartitionLag("t", 0, 110, 100, -10, 0), PartitionLag("t", 1, 0, 4, 4, None)))
    body = ahead.body(lambda topic: True)
    assert (body["total_lag"], body["max_lag_ms"]) == (4, 0)
