"""The ``trace.*`` latency points: stamped events at debug level, nothing otherwise.

``broker.bench.latency_trace`` joins these events across brokers by topic, partition
and offset and subtracts their ``t_ns``; when debug is off a trace point must not
reach structlog at all (it sits on every produce and fetch).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator

import pytest
import structlog
from structlog.testing import capture_logs

from broker.replica_io import trace


@pytest.fixture
def trace_level() -> Iterator[logging.Logger]:
    """The trace module's stdlib logger, under the broker's structlog wiring (``configure_logging``:
    stdlib loggers decide the level) whatever an earlier test in this process configured."""
    saved = structlog.get_config()
    structlog.configure(
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    logger = logging.getLogger(trace.__name__)
    level = logger.level
    trace.flush()
    yield logger
    logger.setLevel(level)
    structlog.configure(**saved)


def test_a_trace_point_at_debug_is_an_event_stamped_with_the_monotonic_clock(trace_level: logging.Logger) -> None:
    trace_level.setLevel(logging.DEBUG)
    before = time.monotonic_ns()
    with capture_logs() as events:
        trace.trace("leader.appended", topic="orders", partition=0, offset=7)
    after = time.monotonic_ns()
    assert trace.enabled()
    [event, flushed] = events
    assert event["event"] == "trace.leader.appended"
    assert flushed["event"] == "trace.flushed" and flushed["events"] == 1
    assert (event["topic"], event["partition"], event["offset"]) == ("orders", 0, 7)
    assert before <= event["t_ns"] <= after


def test_a_trace_point_above_debug_emits_nothing(trace_level: logging.Logger) -> None:
    trace_level.setLevel(logging.INFO)
    with capture_logs() as events:
        trace.trace("leader.appended", topic="orders", partition=0, offset=7)
    assert not trace.enabled()
    assert events == []


async def test_on_a_running_loop_a_trace_point_is_logged_later_in_stamped_order(
    trace_level: logging.Logger,
) -> None:
    """Logging at the point cost the timed loop ~22 µs each: the events wait for the loop's timer."""
    trace_level.setLevel(logging.DEBUG)
    with capture_logs() as events:
        trace.trace("leader.appended", topic="orders", partition=0, offset=7)
        trace.trace("produce.answered", topic="orders", partition=0, offset=7)
        assert events == []
        await asyncio.sleep(trace.FLUSH_AFTER_S * 2)
    assert [event["event"] for event in events] == [
        "trace.leader.appended",
        "trace.produce.answered",
        "trace.flushed",
    ]
    appended, answered, flushed = events
    assert appended["t_ns"] <= answered["t_ns"] < flushed["start_ns"] <= flushed["t_ns"]


async def test_events_kept_under_a_loop_closed_before_its_flush_are_flushed_by_the_next_loop(
    trace_level: logging.Logger,
) -> None:
    """A test process closes loops with events kept: the next loop must still flush, its own and those."""
    trace_level.setLevel(logging.DEBUG)

    async def keep_one() -> None:
        trace.trace("leader.appended", topic="orders", partition=0, offset=1)

    with capture_logs() as events:
        await asyncio.to_thread(asyncio.run, keep_one())
        assert events == [], "kept under a loop that closed before its timer fired"
        trace.trace("produce.answered", topic="orders", partition=0, offset=1)
        await asyncio.sleep(trace.FLUSH_AFTER_S * 2)
    assert [event["event"] for event in events] == [
        "trace.leader.appended",
        "trace.produce.answered",
        "trace.flushed",
    ]
