"""Turning broker answers into the shared ``broker.errors`` classes, plus client-side errors.

A broker error body is decoded by ``broker.error_table`` into the class of its Kafka
name, so callers can ``except NotLeaderOrFollower``; the details (``leader_id``,
``leader_url``, ``log_start_offset`` ...) stay on ``error.details``. An answer that is
not such a body (a proxy's HTML page, a crash) becomes a retriable
``ServiceUnavailable``: the client cannot tell what happened, so it treats the broker
as unreachable and looks the leader up again.

The errors defined here are raised by the client libraries themselves and never come
in a broker's body, so the error table has no rows for them; their codes repeat the
broker error each one is a kind of (``BUFFER_EXHAUSTED`` is a ``REQUEST_TIMED_OUT``).
"""

from __future__ import annotations

from typing import Any

from broker.error_table import decode_error_body
from broker.errors import AuthenticationFailed, HighwaterError, RequestTimedOut, ServiceUnavailable


class ClientConfigError(ValueError):
    """A ``Producer``/``Consumer`` setting was refused when the client was built; nothing was sent.

    The message is one line naming each refused setting as the caller wrote it, the value
    given and what is allowed (``acks=2 is not valid: use 0, 1 or "all"``); ``settings``
    names them (empty for a rule between settings). A ``ValueError``, so code that caught
    pydantic's ``ValidationError`` as one still catches it; no ``HighwaterError``: no broker
    was asked, so there is no Kafka error name or code to give.
    """

    def __init__(self, message: str, settings: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.settings = settings


class BrokerUnreachable(ServiceUnavailable):
    """The request never got an answer (connection refused, reset, or timed out)."""

    name = "BROKER_UNREACHABLE"


class TlsHandshakeFailed(AuthenticationFailed):
    """The TLS handshake with a broker failed: its certificate is not trusted, expired or for another host,
    or it wanted a client certificate this client did not present.

    Not retriable (Kafka's ``SslAuthenticationException``): trying again presents the same
    certificates, so a client stops at once with the reason instead of retrying until a timeout.
    """

    name = "SSL_HANDSHAKE_FAILED"


class ProducerClosed(HighwaterError):
    """``send`` after ``close``, or records still unsent when ``close`` gave up on them."""

    name = "PRODUCER_CLOSED"
    error_code = 40010
    http_status = 400


class IllegalTransactionState(HighwaterError):
    """A transactional producer asked for what its transaction's state forbids (``send`` outside a
    transaction, ``commit`` after a failed batch, anything once fenced); nothing was sent."""

    name = "ILLEGAL_TRANSACTION_STATE"
    error_code = 40011
    http_status = 400


class BufferExhausted(RequestTimedOut):
    """``send`` waited ``max_block_ms`` for ``buffer_memory`` to free up; nothing was queued."""

    name = "BUFFER_EXHAUSTED"


class DeliveryTimedOut(RequestTimedOut):
    """A batch was not acknowledged within ``delivery_timeout_ms`` of its creation."""

    name = "DELIVERY_TIMED_OUT"


def decode_error(status: int, body: Any, url: str) -> HighwaterError:
    """The error an HTTP answer with ``status`` >= 400 and JSON ``body`` stands for."""
    error = decode_error_body(body, status)
    if error is None:
        return ServiceUnavailable(f"{url} answered HTTP {status} without a broker error body", http_status=status)
    return error
