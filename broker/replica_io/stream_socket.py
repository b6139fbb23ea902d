"""The replication stream's connection in the broker: a WebSocket on the inter-broker listener.

Why a WebSocket, and not Kafka's protocol on the Kafka listener or a port of its own:
- it rides the listener brokers already reach each other on: its TLS, its broker token
  (the upgrade is a ``GET /internal/replication/stream`` that ``route_access`` opens to
  brokers only) and the inter-broker URL every broker registers, already proven right
  across hosts;
- aiohttp frames binary messages both ways (its reader is compiled), so a message costs
  a frame header, not a request's parsing, headers and middleware;
- Kafka brokers' own replication is request/response as well (a follower's Fetch is its
  acknowledgement): carrying it would add Kafka's per-field encoding, in Python, to the
  same two messages per round ``fetch_wire`` already encodes, and remove no hop.

Liveness: a follower's fetch waits at most its long poll plus ``ANSWER_GRACE_S`` for an
answer (``replication_stream``); the leader pings every ``HEARTBEAT_S`` and closes a
stream whose follower stopped answering pings, so a host gone silent holds nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp
from aiohttp import WSCloseCode, WSMsgType, web

from broker.errors import InvalidRequest
from broker.replica_io.replication_stream import ANSWER_GRACE_S, AnswerFetch, OpenStream, StreamClosed, serve_stream

STREAM_PATH = "/internal/replication/stream"
CLOSE_TIMEOUT_S = 1.0
"""How long closing waits for the peer's close frame before dropping the connection."""
HEARTBEAT_S = 5.0

Socket = web.WebSocketResponse | aiohttp.ClientWebSocketResponse


class SocketConnection:
    """A ``StreamConnection`` over an aiohttp WebSocket, either end."""

    def __init__(self, socket: Socket) -> None:
        self._socket = socket

    async def send(self, message: bytes) -> None:
        try:
            await self._socket.send_bytes(message)
        except (ConnectionError, RuntimeError, aiohttp.ClientError) as error:
            raise StreamClosed(str(error) or type(error).__name__) from error

    async def receive(self) -> bytes:
        message = await self._socket.receive()
        if message.type is WSMsgType.BINARY:
            return message.data
        raise StreamClosed(f"the stream ended ({message.type.name})")

    async def close(self) -> None:
        await self._socket.close()


def stream_opener(session: aiohttp.ClientSession, leader_url: Callable[[int], str | None]) -> OpenStream:
    """Open streams to leaders at their inter-broker URLs, through the broker's signed ``session``."""

    async def open_stream(leader_id: int) -> SocketConnection:
        url = leader_url(leader_id)
        if url is None:
            raise StreamClosed(f"broker {leader_id} is not registered")
        try:
            async with asyncio.timeout(ANSWER_GRACE_S):
                socket = await session.ws_connect(
                    url + STREAM_PATH,
                    max_msg_size=0,
                    timeout=aiohttp.ClientWSTimeout(ws_close=CLOSE_TIMEOUT_S),
                )
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            raise StreamClosed(f"{url}: {error or type(error).__name__}") from error
        return SocketConnection(socket)

    return open_stream


class ServerStreams:
    """The replication streams this broker answers as leader; all closed at once when it stops."""

    def __init__(self) -> None:
        self._open: set[web.WebSocketResponse] = set()

    async def serve(self, request: web.Request, answer: AnswerFetch, max_message_bytes: int) -> web.WebSocketResponse:
        """Answer one follower's stream until it ends; a request that is not a WebSocket upgrade is refused."""
        socket = web.WebSocketResponse(max_msg_size=max_message_bytes, heartbeat=HEARTBEAT_S)
        if not socket.can_prepare(request).ok:
            raise InvalidRequest(f"{STREAM_PATH} is a WebSocket: the request must ask to upgrade to it")
        await socket.prepare(request)
        self._open.add(socket)
        try:
            await serve_stream(SocketConnection(socket), answer, peer=str(request.remote))
        finally:
            self._open.discard(socket)
            await socket.close()
        return socket

    async def close_all(self) -> None:
        """End every stream (the broker is stopping): each follower fetches again elsewhere or later."""
        for socket in list(self._open):
            await socket.close(code=WSCloseCode.GOING_AWAY)
