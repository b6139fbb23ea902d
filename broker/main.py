"""Run one broker process: bind, start the node, open its doors, stop cleanly on a signal.

The doors are the HTTP(S) app and, when ``kafka_listener`` is set, the Kafka listener;
both see the node only through their own interfaces, and this module builds them beside
each other. Both sockets are bound before the node starts, so ``--port 0`` (and a Kafka
port of 0) resolve into the addresses the broker registers under. On a signal the node
first hands its leaderships over while the doors are open (``BrokerNode.hand_over``: its
followers and clients still reach it meanwhile), then the doors close, then the node stops.

With ``tls.cert_file`` set the listener speaks only TLS and the default advertised URL
is ``https://``: one port, one protocol, so a client that reaches it over plain HTTP is
refused rather than served.
The TLS context is built before the node starts, so a bad certificate path stops the
process before it registers.
"""

from __future__ import annotations

import asyncio
import signal

import structlog
from aiohttp import web

from broker.kafka.dispatch import Dispatcher
from broker.kafka.listener import KafkaListener, advertised_address, bind_socket
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
    kafka_socket = bind_socket(settings.kafka_listener) if settings.kafka_listener else None
    settings = settings.model_copy(update={"port": sock.getsockname()[1]})
    url = settings.advertised_url or default_advertised_url(settings)
    settings = settings.model_copy(update={"advertised_url": url})
    kafka_address = (
        None if kafka_socket is None else advertised_address(kafka_socket, settings.kafka_advertised_listener)
    )
    try:
        node = await BrokerNode.start(settings, kafka_address)
    except BaseException:
        if kafka_socket is not None:
            kafka_socket.close()
        raise
    kafka = (
        None
        if kafka_socket is None
        else KafkaListener(Dispatcher(node), kafka_socket, settings.kafka_max_request_bytes)
    )
    runner = web.AppRunner(create_app(node), access_log=None, handle_signals=False)
    try:
        if kafka is not None:
            await kafka.start()
        await runner.setup()
        await web.SockSite(runner, sock, ssl_context=ssl_context).start()
        log.info("broker.listening", node_id=settings.node_id, url=url, kafka_address=kafka_address)
        await stop.wait()
    finally:
        log.info("broker.stopping", node_id=settings.node_id)
        await node.hand_over()
        await runner.cleanup()
        if kafka is not None:
            await kafka.close()
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
