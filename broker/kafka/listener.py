"""The Kafka-protocol server: one asyncio task per connection, requests answered in order.

Kafka's ordering rule holds per connection: a request is read, handled and answered
before the next one is taken (Kafka mutes a connection while it handles a request),
so pipelined requests are answered in the order sent and a producer's in-flight
batches to one partition are appended in the order sent. Pipelined requests wait in
the socket and in the frame decoder, never in an unbounded queue.

Isolation: whatever one connection sends — garbage, a truncated frame, a 2 GiB size,
a request that does not parse — ends at most that connection, after a structlog
warning naming the peer (a handler may also end its connection on purpose:
``CloseConnection``, after a failed acks=0 produce); every other connection is untouched. Each request is
logged at debug with peer, API, version and correlation id.

Security, per connection (``authn``, ``authz``, ``guard``): with ``kafka_listener_tls``
the socket speaks TLS with the broker's own certificate (SASL_SSL; SASL_PLAINTEXT
without it). A connection's ``Session`` is opened at accept and set in
``authn.SESSION`` for the connection's task. Until it has a principal only
ApiVersions and the SASL APIs are answered; any other request closes the connection
after a warning, as Kafka does, and so does a failed SASL exchange once its answer is
sent. After SaslHandshake v0 the next frames are raw SASL tokens, answered raw. Every
other request runs through ``guard.answer`` (authorization, quotas); a throttled
answer is followed by reading nothing from that connection for the throttle time.
"""

from __future__ import annotations

import asyncio
import socket

import structlog

from broker.kafka.authn import SESSION, Session, authenticate_token, open_session, served_before_authentication
from broker.kafka.codec import MalformedRequest, read_prefix
from broker.kafka.context import CloseConnection
from broker.kafka.dispatch import Dispatcher, Routed, route
from broker.kafka.framing import SIZE_PREFIX, FrameDecoder, FrameError
from broker.kafka.sasl import SaslFailure
from broker.listening import bind_listener
from broker.tls import peer_common_name, server_ssl_context
from config.broker import split_host_port

log = structlog.get_logger(__name__)

READ_BYTES = 256 * 1024
"""Largest read from a socket at once; with the frame limit it bounds one connection's memory."""


class KafkaListener:
    """Serves Kafka clients on an already bound socket until ``close``."""

    def __init__(self, dispatcher: Dispatcher, sock: socket.socket, max_frame_bytes: int) -> None:
        self.dispatcher = dispatcher
        self.sock = sock
        self.max_frame_bytes = max_frame_bytes
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task] = set()
        settings = dispatcher.context.node.settings
        self._authentication = settings.security.authentication
        self._ssl = server_ssl_context(settings.tls) if settings.kafka_listener_tls else None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return host, port

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, sock=self.sock, ssl=self._ssl)
        log.info("kafka.listening", host=self.address[0], port=self.address[1], protocol=self.security_protocol)

    @property
    def security_protocol(self) -> str:
        """Kafka's name for what this listener speaks (what a client's ``security.protocol`` must be)."""
        if self._authentication == "basic":
            return "SASL_SSL" if self._ssl else "SASL_PLAINTEXT"
        return "SSL" if self._ssl else "PLAINTEXT"

    async def close(self) -> None:
        """Stop accepting, end every open connection, and wait for their tasks.

        A listener that never started still owns its bound socket, and closes it."""
        if self._server is None:
            self.sock.close()
        else:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = _peer(writer)
        decoder = FrameDecoder(self.max_frame_bytes)
        certificate_user = peer_common_name(writer.get_extra_info("peercert")) if self._ssl else None
        session = open_session(self._authentication, peer, certificate_user)
        SESSION.set(session)
        try:
            while data := await reader.read(READ_BYTES):
                for frame in decoder.feed(data):
                    await self._answer(frame, session, writer)
            if decoder.pending_bytes:
                log.warning("kafka.truncated_frame", peer=peer, pending_bytes=decoder.pending_bytes)
        except (FrameError, MalformedRequest) as error:
            log.warning("kafka.bad_request_closed", peer=peer, error=str(error))
        except CloseConnection as reason:
            log.info("kafka.connection_closed_by_handler", peer=peer, reason=str(reason))
        except (ConnectionError, asyncio.IncompleteReadError):
            log.debug("kafka.connection_lost", peer=peer)
        except asyncio.CancelledError:
            pass
        except Exception:  # a handler's bug ends this connection only
            log.exception("kafka.request_failed_closed", peer=peer)
        finally:
            self._connections.discard(task)
            writer.close()

    async def _answer(self, frame: bytes, session: Session, writer: asyncio.StreamWriter) -> None:
        peer = session.host
        if session.raw_tokens and session.principal is None:
            await self._raw_token(frame, session, writer)
            return
        api_key = read_prefix(frame).api_key
        if session.principal is None and not served_before_authentication(api_key):
            log.warning("kafka.unauthenticated_request_closed", peer=peer, api_key=api_key)
            raise CloseConnection(f"API key {api_key} before authentication")
        routed = route(frame)
        throttle_ms = 0
        if isinstance(routed, Routed):
            prefix = routed.request.prefix
            log.debug(
                "kafka.request",
                peer=peer,
                api=routed.api_name,
                version=prefix.api_version,
                correlation_id=prefix.correlation_id,
                client_id=routed.request.client_id,
            )
            payload, throttle_ms = await self.dispatcher.answer(routed)
        else:
            log.info("kafka.unsupported_request", peer=peer, api_key=api_key)
            payload = routed
        if payload is not None:
            await _send(writer, payload)
        if session.failed:
            raise CloseConnection("SASL authentication failed")
        if throttle_ms > 0:
            await asyncio.sleep(throttle_ms / 1000)

    async def _raw_token(self, frame: bytes, session: Session, writer: asyncio.StreamWriter) -> None:
        """A SASL token after SaslHandshake v0: the answer is a raw frame; a failure just closes (Kafka's v0)."""
        try:
            answer = authenticate_token(self.dispatcher.context.node, session, frame)
        except SaslFailure as failure:
            raise CloseConnection(f"SASL authentication failed: {failure}") from None
        await _send(writer, answer)


async def _send(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.write(SIZE_PREFIX.pack(len(payload)))
    writer.write(payload)
    await writer.drain()


def _peer(writer: asyncio.StreamWriter) -> str:
    peername = writer.get_extra_info("peername")
    return f"{peername[0]}:{peername[1]}" if peername else "unknown"


def bind_socket(address: str) -> socket.socket:
    """The Kafka listener's socket on ``host:port`` (see ``broker.listening``)."""
    host, port = split_host_port(address)
    return bind_listener(host, port, "the Kafka listener")


def advertised_address(sock: socket.socket, advertised: str | None) -> str:
    """What clients are told: the configured advertised ``host:port``, else the bound one."""
    if advertised is not None:
        return advertised
    host, port = sock.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
