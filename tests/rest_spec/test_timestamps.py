"""Delivery reports write a record's timestamp as the spec's date-time, exactly, or null where it cannot."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from broker.server.producing import LAST_RFC3339_MS, rfc3339

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timestamp_ms", "text"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (1_612_552_482_001, "2021-02-05T19:14:42.001Z"),
        (LAST_RFC3339_MS, "9999-12-31T23:59:59.999Z"),
    ],
)
def test_milliseconds_become_a_utc_date_time_that_reads_back_to_them(timestamp_ms: int, text: str) -> None:
    assert rfc3339(timestamp_ms) == text
    assert (datetime.fromisoformat(text) - EPOCH) // timedelta(milliseconds=1) == timestamp_ms


@pytest.mark.parametrize("timestamp_ms", [LAST_RFC3339_MS + 1, 2**63 - 1])
def test_a_timestamp_past_the_year_9999_is_null(timestamp_ms: int) -> None:
    assert rfc3339(timestamp_ms) is None
