"""Latency trace points of a produce: ``trace.*`` structlog events at debug level.

Each event carries ``t_ns`` from ``time.monotonic_ns()`` (one clock for every process
on a host), the topic, the partition and the offsets it concerns, so
``broker.bench.latency_trace`` can join the events of three brokers into the budget
of one request. When debug is off a trace point costs one ``isEnabledFor`` check (a
cached level lookup, well under a microsecond): the structlog chain is not entered.

At debug a trace point only stamps and keeps its event; the events are logged
``FLUSH_AFTER_S`` after the first one kept (on the event loop's timer, off the path
being measured), when ``MAX_PENDING`` are kept, and at interpreter exit. Logging each
one at once cost ~22 µs of the very loop being timed (structlog through stdlib logging
to the stream), and a lone acks=all write passes about fourteen points: the traced
round trip read 2.1-2.3 ms p50 while ``bench latency`` gave 1.5-1.6 ms for the same tree. A flush still holds the loop (~22 µs an
event), so it ends with ``trace.flushed`` and its span, and the budget leaves out the
requests that overlapped one. A process killed with SIGKILL loses the events of its last
``FLUSH_AFTER_S``.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import time
from collections.abc import Iterable
from typing import Any

import structlog

from broker.replication import fetched_last_offset
from broker.replication.fetch_wire import FetchPartitionResponse, FetchRequest

_stdlib = logging.getLogger(__name__)
_log = structlog.get_logger(__name__)


def enabled() -> bool:
    """Whether trace events are emitted; lets a caller skip building costly fields."""
    return _stdlib.isEnabledFor(logging.DEBUG)


FLUSH_AFTER_S = 0.25
MAX_PENDING = 10_000


class _Kept:
    """The events kept for the next flush, and the loop whose timer will flush them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, dict[str, Any]]] = []
        self.flush_loop: asyncio.AbstractEventLoop | None = None
        """A timer on another loop (one closed before it fired, in a test process) flushes nothing."""

    def add(self, event: str, t_ns: int, fields: dict[str, Any]) -> None:
        self.events.append((event, t_ns, fields))
        if len(self.events) >= MAX_PENDING:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return
        if loop is not self.flush_loop:
            self.flush_loop = loop
            loop.call_later(FLUSH_AFTER_S, self.flush)

    def flush(self) -> None:
        self.flush_loop = None
        if not self.events:
            return
        events, self.events = self.events, []
        start_ns = time.monotonic_ns()
        for event, t_ns, fields in events:
            _log.debug(f"trace.{event}", t_ns=t_ns, **fields)
        _log.debug("trace.flushed", t_ns=time.monotonic_ns(), start_ns=start_ns, events=len(events))


_kept = _Kept()


def trace(event: str, **fields: Any) -> None:
    """Keep ``trace.<event>`` stamped now for ``flush``, when this module logs at debug level."""
    if _stdlib.isEnabledFor(logging.DEBUG):
        _kept.add(event, time.monotonic_ns(), fields)


def flush() -> None:
    """Log every kept event, in the order they were stamped, then ``trace.flushed`` with the
    flush's own span (``start_ns`` to ``t_ns``): a request timed across it paid for the logging."""
    _kept.flush()


atexit.register(flush)


def trace_fetched(event: str, answers: Iterable[FetchPartitionResponse], **fields: Any) -> None:
    """``trace.<event>`` for each partition of a fetch answer that carries records, at its last offset."""
    if not enabled():
        return
    for answer in answers:
        if answer.records:
            trace(
                event,
                topic=answer.topic,
                partition=answer.partition,
                offset=fetched_last_offset(answer.records),
                **fields,
            )


def trace_fetch_sent(request: FetchRequest) -> None:
    """``trace.follower.fetch_sent`` for each partition a follower's fetch names, at the offset it reports held."""
    if not enabled():
        return
    for fp in request.partitions:
        trace(
            "follower.fetch_sent",
            topic=fp.topic,
            partition=fp.partition,
            offset=fp.fetch_offset - 1,
            leader_epoch=fp.current_leader_epoch,
        )
