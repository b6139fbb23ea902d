"""How a follower's fetches reach a leader broker: the seam between the fetch loop and the network.

``ReplicaFetcher`` builds each request and applies each answer; a ``FetchTransport``
only carries one request to the leader and its answer back. The broker's transport is
``HttpFetchTransport`` (``POST /internal/fetch`` on the leader's inter-broker URL, the
binary ``fetch_wire`` encoding, the broker's own signed session); a test or a
simulation gives the same loop a transport of its own, so it runs the fetcher itself
rather than a copy of it.

A transport that cannot deliver raises ``FetchTransportError``: the fetcher starts its
fetch session over and backs off, whatever the cause was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import aiohttp

from broker.errors import HighwaterError
from broker.replica_io import trace
from broker.replication.fetch_wire import CONTENT_TYPE, FetchRequest, FetchResponse, decode_response, encode_request

LeaderUrl = Callable[[int], "str | None"]


class FetchTransportError(Exception):
    """A fetch did not reach the leader, or its answer did not come back."""


class FetchTransport(Protocol):
    def reachable(self, leader_id: int) -> bool:
        """Whether a fetch can be addressed to ``leader_id`` now (the broker knows where it is)."""
        ...

    async def send(self, leader_id: int, request: FetchRequest) -> FetchResponse:
        """Deliver ``request`` to ``leader_id`` and return its answer, or raise ``FetchTransportError``."""
        ...

    async def close(self) -> None:
        """Release what the transport keeps between fetches (the broker stops fetching)."""
        ...


class HttpFetchTransport:
    """Fetches over HTTP to the leader's inter-broker URL, waiting up to the long poll plus 10 s."""

    def __init__(self, session: aiohttp.ClientSession, leader_url: LeaderUrl) -> None:
        self._session = session
        self._leader_url = leader_url

    def reachable(self, leader_id: int) -> bool:
        return self._leader_url(leader_id) is not None

    async def send(self, leader_id: int, request: FetchRequest) -> FetchResponse:
        url = self._leader_url(leader_id)
        if url is None:
            raise FetchTransportError(f"broker {leader_id} is not registered")
        timeout = aiohttp.ClientTimeout(total=request.max_wait_ms / 1000 + 10)
        trace.trace_fetch_sent(request)
        try:
            async with self._session.post(
                f"{url}/internal/fetch",
                data=encode_request(request),
                headers={"Content-Type": CONTENT_TYPE},
                timeout=timeout,
            ) as reply:
                body = await reply.read()
                if reply.status != 200:
                    raise FetchTransportError(f"{url} answered {reply.status}: {body[:200].decode(errors='replace')}")
            response = decode_response(body)
        except (TimeoutError, aiohttp.ClientError, OSError, HighwaterError) as error:
            raise FetchTransportError(f"{url}: {error or type(error).__name__}") from error
        trace.trace_fetched("follower.fetch_received", response.partitions)
        return response

    async def close(self) -> None:
        """Nothing kept: the connections are the broker's session's, which the broker closes."""
