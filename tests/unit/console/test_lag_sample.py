"""What a lag sample keeps of the lag report's rows: committed partitions with a known high watermark."""

from __future__ import annotations

from broker.console.lag_history import PartitionLag
from broker.console.sampling import lag_sample
from broker.groups.lag import LagRow


def row(topic: str, partition: int, committed: int | None, high_watermark: int | None, lag_ms: int | None) -> LagRow:
    lag = high_watermark - committed if committed is not None and high_watermark is not None else None
    return LagRow(
        topic_name=topic,
        partition_id=partition,
        current_offset=committed,
        log_end_offset=high_watermark,
        log_start_offset=0,
        lag=lag,
        lag_ms=lag_ms,
        last_commit_ms=None,
        consumer_id="",
        instance_id=None,
        client_id="",
        status="OK",
    )


def test_a_sample_keeps_committed_partitions_with_a_known_high_watermark_in_topic_order() -> None:
    rows = [
        row("b", 0, 5, 9, 120),
        row("a", 1, None, 9, None),
        row("a", 0, 3, 3, 0),
        row("c", 0, 2, None, None),
    ]
    sample = lag_sample(1234, rows)
    assert sample.time_ms == 1234
    assert sample.partitions == (PartitionLag("a", 0, 3, 3, 0, 0), PartitionLag("b", 0, 5, 9, 4, 120))
