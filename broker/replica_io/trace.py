"""Latency trace points of an acks=all produce: ``trace.*`` structlog events at debug level.

Each event carries ``t_ns`` from ``time.monotonic_ns()`` (one clock for every process
on a host), the topic, the partition and the offsets it concerns, so
``broker.bench.latency_trace`` can join the events of three brokers into the budget
of one request. When debug is off a trace point costs one ``isEnabledFor`` check (a
cached level lookup, well under a microsecond): the structlog chain is not entered.
"""

from __future__ import annotations

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


def trace(event: str, **fields: Any) -> None:
    """Emit ``trace.<event>`` stamped now, when this module logs at debug level."""
    if _stdlib.isEnabledFor(logging.DEBUG):
        _log.debug(f"trace.{event}", t_ns=time.monotonic_ns(), **fields)


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
