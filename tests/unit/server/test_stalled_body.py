"""A client that announces a body and stops sending it gets 408 and a closed connection.

Without a bound, a sender that stalls mid-body held its handler (and its socket) for
as long as it kept the connection open.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from aiohttp.test_utils import TestServer

from broker.node.broker_node import BrokerNode
from broker.server.app import create_app
from tests.unit.server.conftest import broker_settings


async def test_a_stalled_body_is_answered_408_within_the_body_timeout(tmp_path: Path) -> None:
    node = await BrokerNode.start(broker_settings(tmp_path / "data", request_body_timeout_ms=300))
    try:
        async with TestServer(create_app(node), host="127.0.0.1") as server:
            reader, writer = await asyncio.open_connection(server.host, server.port)
            writer.write(
                b"POST /v3/clusters/x/topics HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b'Content-Length: 100\r\n\r\n{"topic_name"'
            )
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
            length = int(
                next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")).split(b":")[1]
            )
            body = await asyncio.wait_for(reader.readexactly(length), timeout=5)
            writer.close()
        assert head.startswith(b"HTTP/1.1 408"), head
        assert b"connection: close" in head.lower()
        assert b"REQUEST_TIMEOUT" in body
    finally:
        await node.stop()
