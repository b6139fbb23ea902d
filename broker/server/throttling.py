"""Byte-rate quotas at the HTTP door: meter a principal's produce and fetch bytes, delay or refuse.

Produce is metered before the append, with the request body's size: a request the
quota refuses (``ThrottlingQuotaExceeded``, 429 with ``Retry-After``) appends nothing
and is not counted. A fetch is checked before reading (refused only when the principal
already owes more than the longest throttle) and metered after, with the bytes it
answers, as Kafka meters the fetch response.

A throttled answer is delayed by the throttle before it is sent (Kafka's delayed
response) and says so: ``X-Throttle-Time-Ms`` on every throttled answer, and
``throttle_time_ms`` in a JSON object answer. Both are absent when nothing was delayed.
A principal without a quota in that direction costs one dict lookup on the snapshot.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from aiohttp import web

from broker.errors import ThrottlingQuotaExceeded
from broker.security.quota import Direction, Throttle, limit_of
from broker.server.authorization import principal_of
from broker.server.params import NODE_KEY

THROTTLE_HEADER = "X-Throttle-Time-Ms"
THROTTLE_FIELD = "throttle_time_ms"
_VERB: dict[Direction, str] = {"produce": "produces", "fetch": "fetches"}
R = TypeVar("R", bound=web.StreamResponse)


def _quota(request: web.Request, direction: Direction) -> tuple[str, int] | None:
    """The principal and its byte rate in ``direction``; None when it has no such quota."""
    quotas = request.app[NODE_KEY].security.view.snapshot.quotas
    if not quotas:
        return None
    principal = str(principal_of(request))
    limits = quotas.get(principal)
    limit = limit_of(limits, direction) if limits is not None else None
    return None if limit is None else (principal, limit)


def _refuse(principal: str, direction: Direction, limit: int, decision: Throttle) -> ThrottlingQuotaExceeded:
    return ThrottlingQuotaExceeded(
        f"{principal} {_VERB[direction]} at {decision.rate:.0f} bytes/s, far over its quota of {limit} bytes/s; "
        f"retry in {decision.refuse_ms} ms",
        principal=principal,
        quota_bytes_per_s=limit,
        rate_bytes_per_s=round(decision.rate),
        retry_after_ms=decision.refuse_ms,
    )


def admit_produce(request: web.Request, nbytes: int) -> int:
    """Meter ``nbytes`` produced; the delay (ms) owed after the append. Raises when refused."""
    quota = _quota(request, "produce")
    if quota is None:
        return 0
    principal, limit = quota
    security = request.app[NODE_KEY].security
    decision = security.quotas.admit(principal, "produce", limit, nbytes, security.now_ms())
    if decision.refused:
        raise _refuse(principal, "produce", limit, decision)
    return decision.delay_ms


def check_fetch(request: web.Request) -> None:
    """Refuse a fetch of a principal that already owes more than the longest throttle."""
    quota = _quota(request, "fetch")
    if quota is None:
        return
    principal, limit = quota
    security = request.app[NODE_KEY].security
    decision = security.quotas.check(principal, "fetch", limit, 0, security.now_ms())
    if decision.refused:
        raise _refuse(principal, "fetch", limit, decision)


def record_fetch(request: web.Request, nbytes: int) -> int:
    """Meter ``nbytes`` fetched; the delay (ms) owed before answering, at most the longest throttle."""
    quota = _quota(request, "fetch")
    if quota is None:
        return 0
    principal, limit = quota
    security = request.app[NODE_KEY].security
    return security.quotas.record(principal, "fetch", limit, nbytes, security.now_ms()).delay_ms


async def pause(delay_ms: int) -> None:
    if delay_ms > 0:
        await asyncio.sleep(delay_ms / 1000)


async def throttled(response: R, delay_ms: int) -> R:
    """``response`` after ``delay_ms``, marked with ``X-Throttle-Time-Ms`` when delayed."""
    if delay_ms > 0:
        await pause(delay_ms)
        response.headers[THROTTLE_HEADER] = str(delay_ms)
    return response


async def throttled_json(body: dict[str, Any], delay_ms: int, status: int = 200) -> web.Response:
    """A JSON object answer after ``delay_ms``, with ``throttle_time_ms`` in it when delayed."""
    if delay_ms > 0:
        body = {**body, THROTTLE_FIELD: delay_ms}
    return await throttled(web.json_response(body, status=status), delay_ms)
