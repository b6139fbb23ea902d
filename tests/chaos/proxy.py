"""A TCP proxy in front of one broker's inter-broker listener (or of the metadata store), that a test can cut.

Brokers register ``--inter-broker-url`` pointing at the proxy, so every broker-to-broker
request (replica fetches, forwarded produces and fetches, calls to the controller) to
that broker passes through it, while clients keep talking to the broker directly. Cutting
the proxy therefore isolates the broker from its peers without hiding it from clients:
a leader that is cut off keeps accepting client writes.

A cut *stalls* bytes instead of dropping them, as a real partition does to a TCP stream
that outlives it: peers see silence and hit their timeouts; when the cut heals, whatever
was held flows on in order (late, like TCP retransmissions). Nothing is ever corrupted or
reordered inside one connection.

Directions are seen from the broker: ``inbound`` carries requests to it, ``outbound``
carries its answers. One proxy only covers traffic *to* its broker; the broker's own
requests to peers go through the peers' proxies.

The metadata store: with sqlite every broker opens the same file, which no network cut
can reach, so a cut-off leader still renews its lease and keeps its leadership. On etcd
each broker reaches the store through a proxy of its own (``ChaosCluster.store_mesh``);
cutting that one too makes the zombie leader: its lease expires and leadership moves
while it still hears clients.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

log = structlog.get_logger(__name__)

INBOUND = "inbound"
OUTBOUND = "outbound"
DIRECTIONS = (INBOUND, OUTBOUND)
CHUNK_BYTES = 64 * 1024


class CuttableProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``upstream_port``; ``block``/``heal`` per direction."""

    def __init__(self, upstream_port: int, port: int = 0) -> None:
        self.upstream_port = upstream_port
        self.port = port
        self._open = {direction: asyncio.Event() for direction in DIRECTIONS}
        for event in self._open.values():
            event.set()
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> CuttableProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._pumps):
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)

    def block(self, direction: str = "both") -> None:
        for name in self._directions(direction):
            self._open[name].clear()
        log.info("proxy.blocked", upstream_port=self.upstream_port, direction=direction)

    def heal(self, direction: str = "both") -> None:
        for name in self._directions(direction):
            self._open[name].set()
        log.info("proxy.healed", upstream_port=self.upstream_port, direction=direction)

    def blocked(self, direction: str) -> bool:
        return not self._open[direction].is_set()

    @staticmethod
    def _directions(direction: str) -> tuple[str, ...]:
        if direction == "both":
            return DIRECTIONS
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'inbound', 'outbound' or 'both', not {direction!r}")
        return (direction,)

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            client_writer.close()
            return
        pumps = [
            asyncio.create_task(self._pump(client_reader, upstream_writer, INBOUND)),
            asyncio.create_task(self._pump(upstream_reader, client_writer, OUTBOUND)),
        ]
        self._pumps.update(pumps)
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass  # the loop is closing; the connection handler just ends
        finally:
            for task in pumps:
                task.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            self._pumps.difference_update(pumps)
            for writer in (client_writer, upstream_writer):
                writer.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, direction: str) -> None:
        """Copy until EOF; each chunk waits while ``direction`` is cut (held, never dropped)."""
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await reader.read(CHUNK_BYTES):
                await self._open[direction].wait()
                writer.write(chunk)
                await writer.drain()


class ProxyMesh:
    """One proxy per broker, by broker id."""

    def __init__(self, proxies: dict[int, CuttableProxy]) -> None:
        self.proxies = proxies

    def isolate(self, broker_id: int, direction: str = "both") -> None:
        """Peers can no longer reach ``broker_id`` (its followers stop fetching from it).

        Its own requests to peers still pass: per-destination proxies cannot tell which
        broker a connection comes from, and cutting the peers' proxies would also cut the
        peers from each other. The result is the asymmetric partition that makes a zombie
        leader: it hears clients, it is heard by nobody it leads.
        """
        self.proxies[broker_id].block(direction)

    def heal_all(self) -> None:
        for proxy in self.proxies.values():
            proxy.heal()
