"""A small blocking HTTP/1.1 client for the driver's planning and the executors' reads.

Spark calls the source from plain threads in Python worker processes, one call at a
time, so a blocking client with one keep-alive connection per broker is all it needs
(an event loop per worker would add a thread and nothing else). Objects of this
module hold sockets, so they are created where they are used and never stored on
anything Spark pickles (the reader, the data source, an input partition).

``BrokerAnswer.error`` decodes the broker's error body through the broker's own error
table (``broker.error_table``), so the connector reads the same names, codes and
retriability as every other client. A broker that does not answer raises
``BrokerUnreachable`` and its connection is dropped, so the next call reconnects.

With a ``ClientSecurity``, every request carries the Basic credentials and every
``https://`` connection verifies the broker (and presents a client certificate) with one
TLS context built when the ``BrokerConnections`` is.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import urlsplit

from broker.client.http import basic_auth_headers
from broker.client.security import ClientSecurity
from broker.error_table import decode_error_body, error_from_name
from broker.errors import HighwaterError
from broker.tls import client_ssl_context


class BrokerUnreachable(ConnectionError):
    """No HTTP answer from a broker (refused, reset, timed out); always worth a retry elsewhere."""


class TlsHandshakeFailed(ConnectionError):
    """The TLS handshake with a broker failed: its certificate is not trusted, expired or for another
    host, or it wanted a client certificate. Never retried: the same files would fail the same way."""


@dataclass(frozen=True, slots=True)
class BrokerAnswer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else {}

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def error(self) -> HighwaterError:
        """The error the broker answered; one named ``HTTP_<status>``, not retriable, when
        the body is not a broker error body (a proxy's page): nothing says a retry helps."""
        try:
            body = self.json()
        except ValueError:
            body = None
        error = decode_error_body(body, self.status)
        if error is None:
            error = error_from_name(f"HTTP_{self.status}", self.body[:200].decode(errors="replace"))
            error.http_status = self.status
        return error


class BrokerConnections:
    """One keep-alive connection per broker URL; not thread-safe (one per task or planning call)."""

    def __init__(self, timeout_s: float, security: ClientSecurity | None = None) -> None:
        self.timeout_s = timeout_s
        self._connections: dict[str, http.client.HTTPConnection] = {}
        security = security or ClientSecurity()
        self._auth_headers = basic_auth_headers(security.username, security.password)
        self._ssl: ssl.SSLContext | None = (
            client_ssl_context(security.ssl_ca_file, security.ssl_cert_file, security.ssl_key_file)
            if security.uses_tls_files
            else None
        )

    def request(
        self,
        method: str,
        base_url: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> BrokerAnswer:
        try:
            connection = self._connection(base_url)
            connection.sock.settimeout(timeout_s or self.timeout_s)
            connection.request(method, path, body=body, headers={**self._auth_headers, **(headers or {})})
            response = connection.getresponse()
            payload = response.read()
        except ssl.SSLError as error:
            self._drop(base_url)
            raise TlsHandshakeFailed(f"{method} {base_url}{path}: TLS handshake failed: {error}") from error
        except (OSError, http.client.HTTPException) as error:
            self._drop(base_url)
            raise BrokerUnreachable(f"{method} {base_url}{path}: {error}") from error
        answer_headers = {name.lower(): value for name, value in response.getheaders()}
        if answer_headers.get("connection", "").lower() == "close":
            self._drop(base_url)
        return BrokerAnswer(response.status, answer_headers, payload)

    def _connection(self, base_url: str) -> http.client.HTTPConnection:
        connection = self._connections.get(base_url)
        if connection is None:
            parts = urlsplit(base_url)
            host = parts.hostname or "127.0.0.1"
            if parts.scheme == "https":
                connection = http.client.HTTPSConnection(host, parts.port, timeout=self.timeout_s, context=self._ssl)
            else:
                connection = http.client.HTTPConnection(host, parts.port, timeout=self.timeout_s)
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._connections[base_url] = connection
        return connection

    def _drop(self, base_url: str) -> None:
        connection = self._connections.pop(base_url, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for base_url in list(self._connections):
            self._drop(base_url)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
