"""A small asyncio HTTP client for the broker's REST API (Confluent REST Proxy v3 paths).

Used by the ``highwater`` client commands; nothing here knows about the command line.
Every failure surfaces as one of two exceptions whose message is a single line an
operator can act on:

* ``BrokerUnreachable`` — no HTTP answer at all (``cannot reach broker at
  http://127.0.0.1:9092: connection refused``);
* ``BrokerError`` — the broker answered with an error body
  ``{error_code, error, message, retriable}`` (or something that is not our API).

The cluster id needed by every ``/v3/clusters/{c}/...`` path is fetched once from
``GET /v3/clusters`` and cached for the client's lifetime.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
from typing import Any
from urllib.parse import quote

import aiohttp
from yarl import URL

from broker.acks import Acks

DEFAULT_SERVER = "http://127.0.0.1:9092"
CONNECT_TIMEOUT_S = 5.0
HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")
"""``host:port`` as Kafka's ``bootstrap.servers`` spells a broker: a name, IPv4 or [IPv6], and a port."""
SERVER_SCHEMES = ("http", "https")


def broker_url(text: str) -> str:
    """The base URL of a broker named on the command line, without a trailing slash.

    ``host:port`` means ``http://host:port`` (the habit Kafka's tools teach); an
    ``http``/``https`` URL is taken as it is. Anything else raises ``ValueError`` with a
    one-line message, before any request is sent: an unusable address is the
    operator's typo to fix, not a connection failure to retry.
    """
    candidate = text.strip()
    if HOST_PORT.fullmatch(candidate):
        candidate = f"http://{candidate}"
    problem = _url_problem(candidate) if "://" in candidate else "neither host:port nor a URL"
    if problem is not None:
        raise ValueError(f"{text!r} is not a broker address ({problem}); give host:port or http://host:port")
    return candidate.rstrip("/")


def _url_problem(candidate: str) -> str | None:
    try:
        url = URL(candidate)
        port = url.port
    except ValueError as error:
        return "malformed URL: " + " ".join(str(error).split())
    if url.scheme not in SERVER_SCHEMES:
        return f"scheme {url.scheme!r} is not http or https"
    if not url.host:
        return "no host"
    if port is None or not 0 < port < 65536:
        return "the port must be 1 to 65535"
    if url.query_string or url.fragment:
        return "a query or fragment has no place in it"
    return None


class BrokerUnreachable(Exception):
    """No HTTP answer from the broker; the message names the URL and the reason."""


class BrokerError(Exception):
    """The broker answered with an error; ``error`` is its Kafka-style name."""

    def __init__(self, status: int, error: str, message: str, body: Any = None) -> None:
        super().__init__(f"{error}: {message}")
        self.status = status
        self.error = error
        self.message = message
        self.body = body


def _connection_reason(error: BaseException) -> str:
    cause = getattr(error, "os_error", None) or error
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused"
    if isinstance(cause, socket.gaierror):
        return "unknown host"
    if isinstance(error, (asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        return "timed out"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the broker closed the connection"
    return getattr(cause, "strerror", None) or str(cause) or type(cause).__name__


def _segment(value: str | int) -> str:
    return quote(str(value), safe="")


class RestClient:
    """One broker's REST API. Use as ``async with RestClient(url) as client: ...``."""

    def __init__(self, server_url: str = DEFAULT_SERVER, request_timeout_s: float = 60.0) -> None:
        self.server_url = server_url.rstrip("/")
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_s, sock_connect=CONNECT_TIMEOUT_S)
        self._session: aiohttp.ClientSession | None = None
        self._cluster_id: str | None = None

    async def __aenter__(self) -> RestClient:
        self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, path: str, *, body: Any = None, params: dict | None = None) -> Any:
        """Send one request; return the decoded JSON body (None for 204) or raise a one-line error."""
        assert self._session is not None, "use RestClient as an async context manager"
        url = self.server_url + path
        try:
            async with self._session.request(method, url, json=body, params=params) as response:
                text = await response.text()
                return self._decode(response, text)
        except (TimeoutError, aiohttp.ClientConnectionError) as error:
            raise BrokerUnreachable(f"cannot reach broker at {self.server_url}: {_connection_reason(error)}") from None

    @staticmethod
    def _decode(response: aiohttp.ClientResponse, text: str) -> Any:
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = None
        if response.status >= 400:
            if isinstance(body, dict) and "error" in body:
                raise BrokerError(response.status, str(body["error"]), str(body.get("message", "")), body)
            raise BrokerError(response.status, f"HTTP_{response.status}", text.strip()[:200] or response.reason or "")
        if text and body is None:
            raise BrokerError(response.status, "BAD_RESPONSE", f"not JSON: {text.strip()[:200]}")
        return body

    async def cluster_id(self) -> str:
        if self._cluster_id is None:
            body = await self.request("GET", "/v3/clusters")
            clusters = body.get("data") if isinstance(body, dict) else None
            if not clusters:
                raise BrokerError(200, "BAD_RESPONSE", "GET /v3/clusters listed no cluster")
            self._cluster_id = str(clusters[0]["cluster_id"])
        return self._cluster_id

    async def _topics_path(self, *parts: str | int) -> str:
        path = f"/v3/clusters/{_segment(await self.cluster_id())}/topics"
        return path + "".join("/" + _segment(part) for part in parts)

    async def list_topics(self) -> list[dict]:
        return (await self.request("GET", await self._topics_path()))["data"]

    async def get_topic(self, topic: str) -> dict:
        return await self.request("GET", await self._topics_path(topic))

    async def create_topic(
        self, topic: str, partitions: int | None, replication_factor: int | None, configs: dict[str, str]
    ) -> dict:
        """Create a topic; a count left as None is the broker's default (its ``topic_defaults``)."""
        body: dict[str, Any] = {"topic_name": topic}
        if partitions is not None:
            body["partitions_count"] = partitions
        if replication_factor is not None:
            body["replication_factor"] = replication_factor
        if configs:
            body["configs"] = [{"name": name, "value": value} for name, value in configs.items()]
        return await self.request("POST", await self._topics_path(), body=body)

    async def delete_topic(self, topic: str) -> None:
        await self.request("DELETE", await self._topics_path(topic))

    async def list_partitions(self, topic: str) -> list[dict]:
        return (await self.request("GET", await self._topics_path(topic, "partitions")))["data"]

    async def produce_batch(self, topic: str, entries: list[dict], acks: Acks) -> dict:
        """``records:batch``: 207 with ``successes`` and ``failures`` (one per entry)."""
        path = await self._topics_path(topic) + "/records:batch"
        return await self.request("POST", path, body={"entries": entries}, params={"acks": acks.value})

    async def read_records(self, topic: str, partition: int, offset: int, max_records: int, timeout_ms: int) -> dict:
        """Records from ``offset`` below the high watermark, long-polling up to ``timeout_ms``."""
        path = await self._topics_path(topic, "partitions", partition, "records")
        params = {"offset": offset, "max_records": max_records, "timeout_ms": timeout_ms, "format": "string"}
        return await self.request("GET", path, params=params)
