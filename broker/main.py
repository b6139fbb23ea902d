"""Run one broker process: bind, start the node, serve HTTP(S), stop cleanly on a signal.

The listening socket is bound before the node starts so ``--port 0`` can be resolved
into the advertised URL the broker registers under. With ``tls.cert_file`` set the
listener speaks only TLS and the default advertised URL is ``https://``: one port, one
protocol, so a client that reaches it over plain HTTP is refused rather than served.
The TLS context is built before the node starts, so a bad certificate path stops the
process before it registers.
"""

from __future__ import annotations

import asyncio
import signal

import structlog
from aiohttp import web

from broker.listening import bind_listener
from broker.node.broker_node import BrokerNode
from broker.server.app import create_app
from broker.tls import default_advertised_url, server_ssl_context
from config.broker import BrokerSettings

log = structlog.get_logger(__name__)


async def serve(settings: BrokerSettings, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set; the node is stopped (logs flushed, HW checkpointed) after."""
    ssl_context = server_ssl_context(settings.tls) if settings.tls.enabled else None
    sock = bind_listener(settings.host, settings.port, "HTTP")
    settings = settings.model_copy(update={"port": sock.getsockname()[1]})
    url = settings.advertised_url or default_advertised_url(settings)
    settings = settings.model_copy(update={"advertised_url": url})
    node = await BrokerNode.start(settings)
    runner = web.AppRunner(create_app(node), access_log=None, handle_signals=False)
    await runner.setup()
    await web.SockSite(runner, sock, ssl_context=ssl_context).start()
    log.info("broker.listening", node_id=settings.node_id, url=url)
    try:
        await stop.wait()
    finally:
        log.info("broker.stopping", node_id=settings.node_id)
        await runner.cleanup()
        await node.stop()


def run_broker(settings: BrokerSettings) -> None:
    """Blocking entry point for ``highwater serve``; uses uvloop when it is installed."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await serve(settings, stop)

    try:
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())
