"""The inter-broker proxy on real loopback sockets: it forwards, it stalls when cut, it resumes."""

from __future__ import annotations

import asyncio

import pytest

from tests.chaos.proxy import CuttableProxy

pytestmark = pytest.mark.asyncio


async def _echo_server() -> asyncio.Server:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1024):
            writer.write(data)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(echo, "127.0.0.1", 0)


async def _round_trip(writer: asyncio.StreamWriter, reader: asyncio.StreamReader, payload: bytes, timeout_s: float):
    writer.write(payload)
    await writer.drain()
    return await asyncio.wait_for(reader.readexactly(len(payload)), timeout_s)


@pytest.mark.parametrize("direction", ["inbound", "outbound", "both"])
async def test_a_cut_stalls_bytes_and_healing_delivers_them_in_order(direction: str) -> None:
    server = await _echo_server()
    proxy = await CuttableProxy(server.sockets[0].getsockname()[1]).start()
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        assert await _round_trip(writer, reader, b"before", 2) == b"before"
        proxy.block(direction)
        with pytest.raises(TimeoutError):
            await _round_trip(writer, reader, b"during", 0.3)
        proxy.heal()
        assert await asyncio.wait_for(reader.readexactly(6), 2) == b"during"
        assert await _round_trip(writer, reader, b"after", 2) == b"after"
    finally:
        writer.close()
        await proxy.close()
        server.close()


async def test_a_cut_also_stalls_connections_opened_during_it() -> None:
    server = await _echo_server()
    proxy = await CuttableProxy(server.sockets[0].getsockname()[1]).start()
    proxy.block("inbound")
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    try:
        with pytest.raises(TimeoutError):
            await _round_trip(writer, reader, b"new", 0.3)
        assert proxy.blocked("inbound") and not proxy.blocked("outbound")
        proxy.heal("inbound")
        assert await asyncio.wait_for(reader.readexactly(3), 2) == b"new"
    finally:
        writer.close()
        await proxy.close()
        server.close()
