"""Turning broker answers into the shared ``broker.errors`` classes, plus client-side errors.

A broker error body is ``{"error_code", "error", "message", "retriable", ...details}``.
The error is rebuilt by its Kafka name so callers can ``except NotLeaderOrFollower``;
the details (``leader_id``, ``leader_url``, ``log_start_offset`` ...) stay on
``error.details``. An answer that is not such a body (a proxy's HTML page, a crash)
becomes a retriable ``ServiceUnavailable``: the client cannot tell what happened, so it
treats the broker as unreachable and looks the leader up again.
"""

from __future__ import annotations

from typing import Any

from broker.errors import (
    HighwaterError,
    RequestTimedOut,
    ServiceUnavailable,
    error_from_name,
)

_ENVELOPE_FIELDS = frozenset({"error", "message", "error_code", "retriable"})


class BrokerUnreachable(ServiceUnavailable):
    """The request never got an answer (connection refused, reset, or timed out)."""

    name = "BROKER_UNREACHABLE"


class ProducerClosed(HighwaterError):
    """``send`` after ``close``, or records still unsent when ``close`` gave up on them."""

    name = "PRODUCER_CLOSED"
    error_code = 40010
    http_status = 400


class BufferExhausted(RequestTimedOut):
    """``send`` waited ``max_block_ms`` for ``buffer_memory`` to free up; nothing was queued."""

    name = "BUFFER_EXHAUSTED"


class DeliveryTimedOut(RequestTimedOut):
    """A batch was not acknowledged within ``delivery_timeout_ms`` of its creation."""

    name = "DELIVERY_TIMED_OUT"


def decode_error(status: int, body: Any, url: str) -> HighwaterError:
    """The error an HTTP answer with ``status`` >= 400 and JSON ``body`` stands for."""
    if not isinstance(body, dict) or not isinstance(body.get("error"), str):
        return ServiceUnavailable(f"{url} answered HTTP {status} without a broker error body", http_status=status)
    details = {key: value for key, value in body.items() if key not in _ENVELOPE_FIELDS}
    error = error_from_name(body["error"], str(body.get("message", "")), **details)
    if type(error) is HighwaterError:
        error.retriable = bool(body.get("retriable", False))
    return error
