"""Does an address speak the Kafka protocol? Asked when an HTTP request got its connection closed.

A Kafka listener reads the first four bytes of a request as a frame size; those of
``GET `` or ``POST`` make a size far above any limit, so it closes the connection
without a word, and an HTTP client only sees "the broker closed the connection". An
HTTPS-only broker reached with ``http://`` does the same, so a close alone proves
nothing: this module sends the smallest Kafka request, ApiVersions v0 (every Kafka
broker answers it, before any authentication, with response header v0), and says yes
only when the answer carries the request's correlation id.

Plain blocking sockets: it runs once, after the command's event loop has ended.
"""

from __future__ import annotations

import socket
import struct

API_VERSIONS_KEY = 18
API_VERSIONS_VERSION = 0
CORRELATION_ID = 0x68_77_21_00
"""Any value; the answer must echo it."""
CLIENT_ID = b"highwater-cli"
PROBE_TIMEOUT_S = 2.0
REQUEST_HEADER = struct.Struct(">hhih")
"""Request header v1: api_key, api_version, correlation_id, client_id length (the id follows)."""
RESPONSE_START = struct.Struct(">ii")
"""The frame size, then response header v0: correlation_id."""


def api_versions_request() -> bytes:
    """A whole ApiVersions v0 request frame (its body is empty)."""
    payload = REQUEST_HEADER.pack(API_VERSIONS_KEY, API_VERSIONS_VERSION, CORRELATION_ID, len(CLIENT_ID)) + CLIENT_ID
    return struct.pack(">i", len(payload)) + payload


def speaks_kafka(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """True when ``host:port`` answers a Kafka ApiVersions request; False on anything else, never raises."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as connection:
            connection.sendall(api_versions_request())
            start = _read_exactly(connection, RESPONSE_START.size)
    except OSError:
        return False
    if start is None:
        return False
    _, correlation_id = RESPONSE_START.unpack(start)
    return correlation_id == CORRELATION_ID


def _read_exactly(connection: socket.socket, count: int) -> bytes | None:
    """``count`` bytes, or None when the peer closed before sending them."""
    received = b""
    while len(received) < count:
        chunk = connection.recv(count - len(received))
        if not chunk:
            return None
        received += chunk
    return received
