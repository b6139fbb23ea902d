"""Asking another broker about itself, for a client: what only that broker knows (its configs, its logs).

A route about broker N that N alone can answer is passed to N once, with the caller's
principal and host (as group requests are passed to their coordinator), and N answers
from its own state. A passed-on request is never passed on again, so two brokers that
disagree about who is who cannot bounce a request between them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web

from broker.errors import NotFound, ServiceUnavailable
from broker.server.authorization import client_host, principal_of
from broker.server.security_middleware import FORWARDED_HOST_HEADER, FORWARDED_PRINCIPAL_HEADER

if TYPE_CHECKING:
    from broker.server.host import HttpHost

PASSED_ON_HEADER = "X-Highwater-Passed-On-By"
PASS_ON_TIMEOUT_S = 10.0


def not_registered(node: HttpHost, broker_id: int) -> NotFound:
    return NotFound(f"broker {broker_id} is not registered in cluster {node.cluster_id!r}", broker_id=broker_id)


async def pass_on(request: web.Request, node: HttpHost, broker_id: int, path: str) -> dict[str, Any]:
    """``GET path`` on broker ``broker_id``, as the caller; ``NotFound`` for a broker that is not registered."""
    url = node.catalog.broker_url(broker_id)
    if url is None or PASSED_ON_HEADER in request.headers:
        raise not_registered(node, broker_id)
    headers = {
        PASSED_ON_HEADER: str(node.node_id),
        FORWARDED_PRINCIPAL_HEADER: str(principal_of(request)),
        FORWARDED_HOST_HEADER: client_host(request),
    }
    try:
        reply = await node.forwarder.relay("GET", f"{url}{path}", None, headers, PASS_ON_TIMEOUT_S)
        body: dict[str, Any] = json.loads(reply.body)
    except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as error:
        raise ServiceUnavailable(f"could not reach broker {broker_id} at {url}: {error}") from None
    if reply.status != 200:
        raise NotFound(f"broker {broker_id} did not answer {path}: {body.get('message')}")
    return body
