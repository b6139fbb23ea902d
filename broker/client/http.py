"""``ClusterClient``: the HTTP session every client library shares with the brokers.

It owns one ``aiohttp.ClientSession`` (keep-alive connections, one pool per broker),
the ``ClusterMetadata`` cache, and the calls the libraries need: partition metadata,
binary produce to a leader, binary fetch from a leader, offsets, producer ids. Every
failure surfaces as a ``broker.errors`` class: broker error bodies are decoded through
the error table (``decode_error``), and a request that got no answer raises
``BrokerUnreachable`` (retriable) whose ``reason`` detail says why in a few words
(``connection refused``), after which the metadata of the topic is marked stale so the
next call looks the leader up again. A failed TLS handshake raises ``TlsHandshakeFailed``
instead, which is not retriable: the same certificates would fail the same way. An error
answer that is not a broker error body (a proxy's page, a path that is not the API) keeps
the start of its text as the ``answer`` detail: it is all an operator has to go on.

Security options (the same names in every client, the CLI and the Spark connector):
``username``/``password`` send HTTP Basic credentials with every request, and
``ssl_ca_file``/``ssl_cert_file``/``ssl_key_file`` verify ``https://`` brokers against a CA
(the system's trust store without one) and present a client certificate (mTLS). Files are
loaded when the client is built, so a bad path fails there, not at the first request. The
password lives only in the session's ``Authorization`` header; it is never logged.

Metadata is read from any reachable broker, known brokers first and the bootstrap
URLs last, so a client keeps working when the broker it started from is gone. A broker
that gave no answer to any request (down, or hung: a paused process accepts connections
and never replies) is asked after all the others for ``unresponsive_backoff_ms``
(``broker.client.unresponsive``), so one hung broker first in the list costs one
request timeout per backoff, not one per refresh. Concurrent refreshes of one topic
share a single request.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import logging
import socket
import ssl
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import aiohttp

from broker.acks import Acks
from broker.client.errors import BrokerUnreachable, TlsHandshakeFailed, decode_error
from broker.client.library_log import library_logger
from broker.client.metadata import ClusterMetadata
from broker.client.types import (
    BrokerInfo,
    FetchResult,
    PartitionInfo,
    PartitionOffsets,
    ProduceAck,
    TopicPartition,
)
from broker.client.unresponsive import UnresponsiveServers
from broker.clock import monotonic_ms
from broker.errors import HighwaterError, NotFound, ServiceUnavailable
from broker.isolation import Isolation
from broker.record.committed import parse_aborted
from broker.tls import client_ssl_context

BATCH_CONTENT_TYPE = "application/vnd.kafka.batch.v2"
FETCH_TIMEOUT_MARGIN_S = 5.0
"""Added to a long-poll's ``timeout_ms`` so the HTTP timeout never fires before the broker answers."""

NO_CLIENT_CERTIFICATE_HINT = " (a broker that requires client certificates does that to a client without one)"
"""Added to a TLS disconnect when this client has no certificate: with TLS 1.3 the broker refuses
a missing certificate after the handshake, so the client sees only the connection close."""

CONNECTION_REFUSED = "connection refused"
CLOSED_BY_BROKER = "the broker closed the connection"
"""Two ``reason`` details callers may act on: nothing listens there, or it hung up without an HTTP answer."""

log = library_logger(__name__)


def no_answer_reason(error: BaseException) -> str:
    """Why a request got no answer, in the words an operator acts on (``connection refused``)."""
    cause = getattr(error, "os_error", None) or error
    if isinstance(cause, ConnectionRefusedError):
        return CONNECTION_REFUSED
    if isinstance(cause, socket.gaierror):
        return "unknown host"
    if isinstance(error, (TimeoutError, aiohttp.ServerTimeoutError)):
        return "timed out"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return CLOSED_BY_BROKER
    return getattr(cause, "strerror", None) or str(cause) or type(cause).__name__


def closed_by_broker(error: BaseException) -> bool:
    """The broker closed or reset the connection instead of answering."""
    return isinstance(error, aiohttp.ServerDisconnectedError) or getattr(error, "errno", None) == errno.ECONNRESET


def tls_failure(error: BaseException) -> ssl.SSLError | None:
    """The TLS error behind a failed request, if a failed handshake is why it got no answer."""
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        cause = error.certificate_error
        return cause if isinstance(cause, ssl.SSLError) else ssl.SSLError(str(cause))
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = getattr(seen, "os_error", None) or seen.__cause__ or seen.__context__
    return None


def tls_reason(error: ssl.SSLError) -> str:
    """A handshake failure in a few words (``certificate has expired``), without OpenSSL's source location."""
    verify_message = getattr(error, "verify_message", None)
    if verify_message:
        return str(verify_message)
    if error.reason:
        return error.reason.replace("_", " ").lower()
    return str(error)


def basic_auth_headers(username: str | None, password: str | None) -> dict[str, str]:
    """The ``Authorization`` header of HTTP Basic credentials (RFC 7617, UTF-8), or none without credentials.

    One of the two without the other, or a ``:`` in the username (it would end the
    username early), is a configuration error.
    """
    if username is None and password is None:
        return {}
    if username is None or password is None:
        missing = "password" if password is None else "username"
        raise ValueError(f"username and password go together: {missing} is missing")
    if ":" in username:
        raise ValueError(f"username {username!r} may not contain ':'")
    token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
    return {"Authorization": f"Basic {token}"}


def _partition_info(topic: str, item: dict[str, Any]) -> PartitionInfo:
    return PartitionInfo(
        topic=topic,
        partition=int(item["partition_id"]),
        leader_id=item.get("leader_id"),
        leader_epoch=int(item.get("leader_epoch", -1)),
        replicas=tuple(item.get("replica_ids", ())),
        isr=tuple(item.get("isr", ())),
        log_start_offset=int(item.get("log_start_offset", 0)),
        high_watermark=int(item.get("high_watermark", 0)),
        log_end_offset=int(item.get("log_end_offset", 0)),
    )


LIST_OFFSETS_RETRY_BACKOFF_MS = 100
"""The pause before asking for a partition's offsets again after a retriable answer."""


class ClusterClient:
    """Metadata cache plus HTTP calls; one per producer or consumer, used from one event loop."""

    def __init__(
        self,
        bootstrap_urls: Iterable[str],
        *,
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int | None = None,
        metadata_max_age_ms: int = 300_000,
        unresponsive_backoff_ms: int = 30_000,
        client_id: str = "highwater-client",
        max_connections: int = 100,
        username: str | None = None,
        password: str | None = None,
        ssl_ca_file: Path | str | None = None,
        ssl_cert_file: Path | str | None = None,
        ssl_key_file: Path | str | None = None,
    ) -> None:
        self.bootstrap_urls = [url.rstrip("/") for url in bootstrap_urls]
        if not self.bootstrap_urls:
            raise ValueError("at least one bootstrap URL is needed")
        self.request_timeout_ms = request_timeout_ms
        self._connect_timeout_s = None if connect_timeout_ms is None else connect_timeout_ms / 1000
        self.metadata_max_age_ms = metadata_max_age_ms
        self.client_id = client_id
        self.metadata = ClusterMetadata()
        self._unresponsive = UnresponsiveServers(unresponsive_backoff_ms)
        self._max_connections = max_connections
        self._headers = {"User-Agent": client_id, **basic_auth_headers(username, password)}
        tls_options = (ssl_ca_file, ssl_cert_file, ssl_key_file)
        self._ssl: ssl.SSLContext | bool = client_ssl_context(*tls_options) if any(tls_options) else True
        self._has_cert = ssl_cert_file is not None
        self._session: aiohttp.ClientSession | None = None
        self._refreshing: dict[str, asyncio.Task[None]] = {}

    # ------------------------------------------------------------------ session

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=0, ssl=self._ssl)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers, auto_decompress=False)
        return self._session

    async def close(self) -> None:
        for task in self._refreshing.values():
            task.cancel()
        self._refreshing.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _request(
        self, method: str, url: str, *, timeout_s: float | None = None, **kwargs: Any
    ) -> tuple[bytes, dict[str, str]]:
        """Body and headers of a 2xx answer; the decoded broker error otherwise.

        Every request tells ``_unresponsive`` whether its broker answered, whatever the
        status, so the order of ``candidate_urls`` follows what the client last saw.
        """
        total_s = self.request_timeout_ms / 1000 if timeout_s is None else timeout_s
        try:
            timeout = aiohttp.ClientTimeout(total=total_s, sock_connect=self._connect_timeout_s)
            async with self._http().request(method, url, timeout=timeout, **kwargs) as reply:
                body = await reply.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            failure = tls_failure(error)
            if failure is not None:
                reason = f"TLS handshake failed: {tls_reason(failure)}"
                raise TlsHandshakeFailed(f"{url}: {reason}", url=url, reason=reason) from None
            self._unresponsive.no_answer(url, monotonic_ms())
            text = str(error) or type(error).__name__
            reason = no_answer_reason(error)
            if closed_by_broker(error) and url.startswith("https://") and not self._has_cert:
                reason += NO_CLIENT_CERTIFICATE_HINT
            raise BrokerUnreachable(f"no answer from {url}: {text}", url=url, reason=reason) from None
        self._unresponsive.answered(url)
        if reply.status >= 400:
            raise _answer_error(reply.status, reply.reason, body, url)
        return body, dict(reply.headers)

    async def _json(self, method: str, url: str, body: Any = None, **kwargs: Any) -> Any:
        raw, _ = await self._request(method, url, json=body, **kwargs)
        return json.loads(raw) if raw else {}

    # ------------------------------------------------------------------ metadata

    async def json_call(self, method: str, url: str, body: Any = None, **kwargs: Any) -> Any:
        """One JSON request to ``url``; the decoded JSON answer, or the broker error it stands for."""
        return await self._json(method, url, body, **kwargs)

    def candidate_urls(self) -> list[str]:
        """Brokers to try in turn: known ones, then bootstrap URLs; those that recently gave no answer last."""
        return self._candidate_urls()

    def _candidate_urls(self) -> list[str]:
        known = list(dict.fromkeys(self.metadata.brokers.values()))
        configured = known + [url for url in self.bootstrap_urls if url not in known]
        return self._unresponsive.in_order(configured, monotonic_ms())

    async def _first_answer(self, path_of: Any) -> tuple[str, Any]:
        """GET ``path_of(cluster_id)`` from the first broker that answers; (its URL, the JSON)."""
        last_error: HighwaterError | None = None
        for url in self._candidate_urls():
            try:
                if self.metadata.cluster_id is None:
                    self.metadata.cluster_id = _first_cluster_id(url, await self._json("GET", f"{url}/v3/clusters"))
                return url, await self._json("GET", url + path_of(self.metadata.cluster_id))
            except (BrokerUnreachable, ServiceUnavailable) as error:
                last_error = error
        raise last_error or BrokerUnreachable("no broker URL to ask")

    async def cluster_id(self) -> str:
        if self.metadata.cluster_id is None:
            await self._first_answer(lambda cluster_id: f"/v3/clusters/{cluster_id}")
        assert self.metadata.cluster_id is not None
        return self.metadata.cluster_id

    async def refresh_topic(self, topic: str) -> None:
        """Reload brokers and the partitions of ``topic``; concurrent callers share one request."""
        task = self._refreshing.get(topic)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._refresh_topic(topic))
            self._refreshing[topic] = task
            task.add_done_callback(lambda _: self._refreshing.pop(topic, None))
        await asyncio.shield(task)

    async def _refresh_topic(self, topic: str) -> None:
        url, brokers = await self._first_answer(lambda cluster_id: f"/v3/clusters/{cluster_id}/brokers")
        self.metadata.update_brokers([BrokerInfo(int(b["broker_id"]), b["url"]) for b in brokers["data"]])
        path = f"/v3/clusters/{self.metadata.cluster_id}/topics/{topic}/partitions"
        answer = await self._json("GET", url + path)
        partitions = [_partition_info(topic, item) for item in answer["data"]]
        self.metadata.update_topic(topic, partitions, monotonic_ms())
        if log.isEnabledFor(logging.DEBUG):
            leaders = {info.partition: (info.leader_id, info.leader_epoch) for info in partitions}
            log.debug("metadata_refreshed topic=%s leaders=%s", topic, leaders)

    async def ensure_topic(self, topic: str) -> int:
        """The partition count of ``topic``, refreshing its metadata if unknown, stale or old."""
        if self.metadata.needs_refresh(topic, monotonic_ms(), self.metadata_max_age_ms):
            await self.refresh_topic(topic)
        count = self.metadata.partition_count(topic)
        assert count is not None
        return count

    async def partitions(self, topic: str) -> list[PartitionInfo]:
        """The partitions of ``topic`` as a broker describes them right now (always a fresh read)."""
        await self.refresh_topic(topic)
        count = self.metadata.partition_count(topic) or 0
        found = (self.metadata.partition(TopicPartition(topic, p)) for p in range(count))
        return [info for info in found if info is not None]

    # ------------------------------------------------------------------ data path

    def partition_path(self, tp: TopicPartition) -> str:
        return f"/v3/clusters/{self.metadata.cluster_id}/topics/{tp.topic}/partitions/{tp.partition}"

    async def produce(
        self,
        leader_url: str,
        tp: TopicPartition,
        batch: bytes,
        acks: Acks,
        timeout_ms: int,
        transactional_id: str | None = None,
    ) -> ProduceAck:
        """POST one record batch v2 to the partition's leader; the leader's offsets for it. A transactional
        batch names its producer's ``transactional_id`` (the leader verifies it with the coordinator)."""
        params = {"acks": acks.value, "timeout_ms": str(timeout_ms)}
        if transactional_id is not None:
            params["transactional_id"] = transactional_id
        answer = await self._json(
            "POST",
            f"{leader_url}{self.partition_path(tp)}/batches",
            None,
            params=params,
            data=batch,
            headers={"Content-Type": BATCH_CONTENT_TYPE},
            timeout_s=timeout_ms / 1000 + FETCH_TIMEOUT_MARGIN_S,
        )
        return ProduceAck(
            partition=int(answer.get("partition_id", tp.partition)),
            base_offset=answer.get("base_offset"),
            last_offset=answer.get("last_offset"),
            log_append_time_ms=int(answer.get("log_append_time", -1)),
        )

    async def fetch(
        self,
        leader_url: str,
        tp: TopicPartition,
        offset: int,
        max_bytes: int,
        timeout_ms: int,
        isolation: Isolation = Isolation.READ_UNCOMMITTED,
    ) -> FetchResult:
        """Raw batches from ``offset``, long-polling up to ``timeout_ms`` when nothing is below the HW
        (the LSO for ``read_committed``, whose answer also lists the aborted transactions in it)."""
        params = {"offset": str(offset), "max_bytes": str(max_bytes), "timeout_ms": str(timeout_ms)}
        if isolation.committed:
            params["isolation"] = isolation.value
        body, headers = await self._request(
            "GET",
            f"{leader_url}{self.partition_path(tp)}/records",
            params=params,
            headers={"Accept": BATCH_CONTENT_TYPE},
            timeout_s=timeout_ms / 1000 + self.request_timeout_ms / 1000,
        )
        high_watermark = int(headers["X-High-Watermark"])
        return FetchResult(
            data=body,
            high_watermark=high_watermark,
            log_start_offset=int(headers["X-Log-Start-Offset"]),
            log_end_offset=int(headers.get("X-Log-End-Offset", high_watermark)),
            next_offset=int(headers.get("X-Next-Offset", offset)),
            last_stable_offset=int(headers.get("X-Last-Stable-Offset", high_watermark)),
            aborted=parse_aborted(headers.get("X-Aborted-Transactions")),
        )

    async def list_offsets(self, tp: TopicPartition) -> PartitionOffsets:
        """Earliest offset, HW and log end offset, asked of the leader when one is known.

        A retriable answer (the leader moving or unreachable, a new leader whose HW has not
        reached its epoch's start yet) is asked again, with the leader looked up afresh,
        until ``request_timeout_ms`` has passed, as Kafka's ``endOffsets`` waits out its
        timeout: a seek to the end right after a failover waits instead of failing.
        """
        deadline_ms = monotonic_ms() + self.request_timeout_ms
        while True:
            await self.ensure_topic(tp.topic)
            url = self.metadata.leader_url(tp) or self._candidate_urls()[0]
            try:
                answer = await self._json("GET", f"{url}{self.partition_path(tp)}/offset")
                break
            except HighwaterError as error:
                if not error.retriable or monotonic_ms() + LIST_OFFSETS_RETRY_BACKOFF_MS > deadline_ms:
                    raise
                self.metadata.mark_stale(tp.topic)
                await asyncio.sleep(LIST_OFFSETS_RETRY_BACKOFF_MS / 1000)
        return PartitionOffsets(
            earliest_offset=int(answer["earliest_offset"]),
            latest_offset=int(answer["latest_offset"]),
            log_end_offset=int(answer.get("log_end_offset", answer["latest_offset"])),
            last_stable_offset=int(answer.get("last_stable_offset", answer["latest_offset"])),
        )

    async def init_producer_id(self) -> tuple[int, int] | None:
        """A fresh (producer_id, producer_epoch) for idempotence; ``None`` if the cluster has none to give."""
        cluster_id = await self.cluster_id()
        for url in self._candidate_urls():
            try:
                answer = await self._json("POST", f"{url}/v3/clusters/{cluster_id}/producer-ids", {})
            except NotFound:
                return None
            except BrokerUnreachable:
                continue
            return int(answer["producer_id"]), int(answer["producer_epoch"])
        raise BrokerUnreachable("no broker answered the producer id request")


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _answer_error(status: int, reason: str | None, body: bytes, url: str) -> HighwaterError:
    """The error an answer with ``status`` >= 400 stands for; see the module doc for ``answer``."""
    payload = _json_or_none(body)
    error = decode_error(status, payload, url)
    if not (isinstance(payload, dict) and isinstance(payload.get("error"), str)):
        error.details["answer"] = body.decode(errors="replace").strip()[:200] or reason or ""
    return error


def _first_cluster_id(url: str, clusters: Any) -> str:
    """The cluster a ``GET /v3/clusters`` answer lists; an answer listing none is not the API."""
    data = clusters.get("data") if isinstance(clusters, dict) else None
    if not data or not isinstance(data[0], dict) or not isinstance(data[0].get("cluster_id"), str):
        raise ServiceUnavailable(f"{url}/v3/clusters listed no cluster")
    return data[0]["cluster_id"]
