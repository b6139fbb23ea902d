"""Passing a request to the coordinator that must answer it (a group's or a transactional id's), and
gathering what every coordinator holds (the cluster-wide listings).

Any broker accepts a coordinated request. One that is not the coordinator forwards it
unchanged, as the caller (principal and host), and relays the answer; the forwarded
request carries ``X-Highwater-Forwarded-By``, and a broker that receives it and is not
the coordinator either answers ``NOT_COORDINATOR`` (retriable, naming the coordinator)
instead of forwarding again: a coordinator change mid-flight never makes a loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web

from broker.errors.groups import CoordinatorNotAvailable
from broker.server.authorization import client_host, principal_of
from broker.server.params import NODE_KEY
from broker.server.security_middleware import FORWARDED_HOST_HEADER, FORWARDED_PRINCIPAL_HEADER

FORWARDED_HEADER = "X-Highwater-Forwarded-By"
FORWARD_TIMEOUT_S = 35.0
"""Past the longest wait a coordinated call makes (a heartbeat's, a commit's acks=all)."""


def forwarded(request: web.Request) -> bool:
    return FORWARDED_HEADER in request.headers


async def relay_as_caller(request: web.Request, url: str, extra_headers: dict[str, str] | None = None) -> web.Response:
    """Relay ``request`` unchanged to the broker at ``url``, as the caller, marked forwarded; its answer as it is.

    The transport's failures (``TimeoutError``, ``aiohttp.ClientError``, ``OSError``)
    reach the caller, which names what it could not reach.
    """
    node = request.app[NODE_KEY]
    headers = {
        FORWARDED_HEADER: str(node.node_id),
        FORWARDED_PRINCIPAL_HEADER: str(principal_of(request)),
        FORWARDED_HOST_HEADER: client_host(request),
        "Content-Type": request.headers.get("Content-Type", "application/json"),
        **(extra_headers or {}),
    }
    body = await request.read() if request.body_exists else None
    reply = await node.forwarder.relay(request.method, f"{url}{request.rel_url}", body, headers, FORWARD_TIMEOUT_S)
    return web.Response(body=reply.body, status=reply.status, content_type=reply.content_type)


async def forward_to_coordinator(
    request: web.Request, url: str, what: str, extra_headers: dict[str, str] | None = None
) -> web.Response:
    """Relay ``request`` to the coordinator at ``url``; its answer comes back unchanged.

    ``what`` names the coordinator in the error when it cannot be reached (retriable
    ``COORDINATOR_NOT_AVAILABLE``).
    """
    try:
        return await relay_as_caller(request, url, extra_headers)
    except (TimeoutError, aiohttp.ClientError, OSError) as error:
        raise CoordinatorNotAvailable(f"could not reach the {what} at {url}: {error}") from None


LISTING_TIMEOUT_S = 5.0


async def from_every_coordinator(request: web.Request, local: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    """``local`` and what each other broker's internal ``path`` lists (``{"data": [...]}``): each broker
    coordinates its own share. A broker that does not answer in ``LISTING_TIMEOUT_S`` is left out."""
    node = request.app[NODE_KEY]
    others = [url for b in node.catalog.broker_ids() if b != node.node_id and (url := node.catalog.broker_url(b))]
    answers = await asyncio.gather(
        *(node.forwarder.json_call("GET", f"{url}{path}", timeout_s=LISTING_TIMEOUT_S) for url in others),
        return_exceptions=True,
    )
    gathered = list(local)
    for answer in answers:
        if isinstance(answer, dict):
            gathered.extend(answer.get("data", []))
    return gathered
