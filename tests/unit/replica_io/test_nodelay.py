"""Replica fetches are never held back by Nagle's algorithm.

A fetch request and its answer are each one small write; with Nagle on, a write that
follows an unacknowledged one waits for the peer's delayed ACK (up to 40 ms on Linux).
The broker relies on its libraries for TCP_NODELAY on every connection it makes or
accepts (asyncio's and uvloop's TCP transports, and aiohttp's
``BaseProtocol.connection_made`` again); this pins it for the inter-broker client (a
``TCPConnector`` session, as ``BrokerNode`` builds it) and the server, on both event
loops a broker may run (``broker.main`` uses uvloop when installed).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable

import aiohttp
import pytest
import uvloop
from aiohttp import web


def _nodelay(transport) -> int:
    sock = transport.get_extra_info("socket")
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


@pytest.mark.parametrize("loop_factory", [asyncio.new_event_loop, uvloop.new_event_loop], ids=["asyncio", "uvloop"])
def test_client_and_server_connections_set_tcp_nodelay(loop_factory: Callable[[], asyncio.AbstractEventLoop]) -> None:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(_check_both_sides())


async def _check_both_sides() -> None:
    async def handler(request: web.Request) -> web.Response:
        """The flag, then enough bytes that the client still holds the connection after the headers."""
        return web.Response(body=bytes([_nodelay(request.transport) != 0]) + bytes(4 << 20))

    app = web.Application()
    app.router.add_post("/internal/fetch", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with (
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256)) as session,
            session.post(f"http://127.0.0.1:{port}/internal/fetch", data=b"x") as reply,
        ):
            assert reply.connection is not None
            assert _nodelay(reply.connection.transport) != 0, "the inter-broker client's side"
            assert (await reply.read())[0] == 1, "the server's side of the connection"
    finally:
        await runner.cleanup()
