"""Planning asks a server that hangs only once per backoff, not on every call (real sockets, no Spark).

Pins a failure seen in the Spark suite: with a paused (SIGSTOPped) broker first in
``servers``, every short-lived planning call waited out the same timeout on it, and an
availableNow query ran past two minutes.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from spark_connector import metadata
from spark_connector.metadata import ClusterMetadata

TIMEOUT_S = 0.5


class _Clusters(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"data": [{"cluster_id": "c1"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Clusters)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _HungServer:
    """Accepts connections (the kernel's backlog) and never answers, like a paused broker."""

    def __init__(self, listener: socket.socket) -> None:
        self._listener = listener
        self.url = f"http://127.0.0.1:{listener.getsockname()[1]}"

    def connections_since_last_look(self) -> int:
        """Connections clients opened to it since the last call (taken off the backlog)."""
        count = 0
        while True:
            try:
                connection, _ = self._listener.accept()
            except BlockingIOError:
                return count
            connection.close()
            count += 1


@pytest.fixture
def hung_server() -> Iterator[_HungServer]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        listener.setblocking(False)
        server = _HungServer(listener)
        yield server
    metadata.UNRESPONSIVE.answered(server.url)


def _timed_cluster_id(servers: list[str]) -> float:
    started = time.monotonic()
    with ClusterMetadata(servers, timeout_s=TIMEOUT_S, retry_for_s=5) as client:
        assert client.cluster_id == "c1"
    return time.monotonic() - started


def test_a_hung_server_is_waited_for_once_then_asked_last(hung_server: _HungServer, answering_server: str) -> None:
    servers = [hung_server.url, answering_server]
    assert _timed_cluster_id(servers) >= TIMEOUT_S
    assert hung_server.connections_since_last_look() == 1
    _timed_cluster_id(servers)
    _timed_cluster_id(servers)
    assert hung_server.connections_since_last_look() == 0, "the hung server was asked again before its backoff ended"
