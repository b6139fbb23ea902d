"""The replica fetch over a kept-open connection: one per (follower broker, leader broker).

Why a stream: over HTTP, each fetch and each answer pays a request's parsing, headers,
middleware and handler dispatch, 0.3-0.5 ms per hop on loopback, and a lone acks=all
produce waits for two such hops in series per follower: the answer carrying its batch,
then the next fetch carrying the follower's durable offset. On a kept-open connection a
fetch and its answer are one binary message each, and the leader's answer to a parked
fetch is a push of what was just appended.

What does not change: the request and the answer are ``fetch_wire``'s, in the same fetch
session (``fetch_session``), answered by the same ``serve_replica_fetch`` (the long poll,
the epochs, the ISR and HW rules of the pure core). The follower's next fetch is still
its acknowledgement, sent as soon as it has fsynced what the answer brought, so
"acknowledged => on disk on every ISR member" holds as before.

**The pairing rule** (the invariant of this module): a connection carries at most one
fetch at a time, and the next message the leader sends on it is that fetch's answer. A
fetch that fails in any way - the connection broke, the answer did not come within the
long poll plus ``ANSWER_GRACE_S``, the wait was cancelled, the answer did not decode -
closes its connection, so an answer that arrives late can never be taken for the next
fetch's. (A client that paired each reply with whichever request was pending handed one
etcd watch another's events; see ``broker.cluster.etcd_watch``.)

A connection is any ``StreamConnection``: the broker's is a WebSocket on the leader's
inter-broker listener (``stream_socket``); the seeded simulation gives one over its
lossy network, so it runs this module rather than a copy of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

import structlog

from broker.errors import HighwaterError
from broker.replica_io import trace
from broker.replica_io.fetch_transport import FetchTransportError
from broker.replication.fetch_wire import (
    FetchRequest,
    FetchResponse,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

log = structlog.get_logger(__name__)

ANSWER_GRACE_S = 10.0
"""How long past its long poll a fetch waits for its answer before its connection is dropped."""


class StreamClosed(Exception):
    """The connection is gone: closed by either side, broken, or never opened."""


class StreamConnection(Protocol):
    async def send(self, message: bytes) -> None:
        """Queue ``message`` on the connection; raises ``StreamClosed`` when it is gone."""
        ...

    async def receive(self) -> bytes:
        """The next message from the peer; raises ``StreamClosed`` when the connection ends."""
        ...

    async def close(self) -> None:
        """End the connection; a message still in flight on it is never received."""
        ...


OpenStream = Callable[[int], Awaitable[StreamConnection]]
"""Open a connection to broker ``leader_id``, or raise ``StreamClosed``."""


class StreamFetchTransport:
    """A ``FetchTransport`` keeping one connection open per leader broker (the pairing rule above).

    One ``ReplicaFetcher`` per leader sends one fetch at a time, so a connection is never
    shared by two fetches in flight; a connection is taken out of the table while its fetch
    is in flight and put back only once its answer was received and decoded.
    """

    def __init__(
        self, open_stream: OpenStream, reachable: Callable[[int], bool], *, answer_grace_s: float = ANSWER_GRACE_S
    ) -> None:
        self._open_stream = open_stream
        self._reachable = reachable
        self._answer_grace_s = answer_grace_s
        self._connections: dict[int, StreamConnection] = {}

    def reachable(self, leader_id: int) -> bool:
        return self._reachable(leader_id)

    async def send(self, leader_id: int, request: FetchRequest) -> FetchResponse:
        connection = self._connections.pop(leader_id, None)
        answered = False
        try:
            if connection is None:
                connection = await self._open_stream(leader_id)
            trace.trace_fetch_sent(request)
            await connection.send(encode_request(request))
            async with asyncio.timeout(request.max_wait_ms / 1000 + self._answer_grace_s):
                body = await connection.receive()
            response = decode_response(body)
            answered = True
        except (StreamClosed, TimeoutError, HighwaterError) as error:
            raise FetchTransportError(f"broker {leader_id}: {error or type(error).__name__}") from error
        finally:
            if connection is not None:
                if answered:
                    self._connections[leader_id] = connection
                else:
                    await connection.close()
        trace.trace_fetched("follower.fetch_received", response.partitions)
        return response

    async def close(self) -> None:
        """Close every kept connection (the broker stops fetching)."""
        connections, self._connections = self._connections, {}
        for connection in connections.values():
            await connection.close()


AnswerFetch = Callable[[FetchRequest], Awaitable[FetchResponse]]


async def serve_stream(connection: StreamConnection, answer: AnswerFetch, *, peer: str) -> None:
    """The leader's side: answer one follower's fetches in the order they come, until the connection ends.

    A message that is not a fetch request ends the connection (the follower starts over
    on a new one); nothing it named is recorded.
    """
    while True:
        try:
            body = await connection.receive()
        except StreamClosed:
            return
        try:
            request = decode_request(body)
        except HighwaterError as error:
            log.warning("replication_stream.bad_request", peer=peer, error=str(error))
            await connection.close()
            return
        response = await answer(request)
        try:
            await connection.send(encode_response(response))
        except StreamClosed:
            return
