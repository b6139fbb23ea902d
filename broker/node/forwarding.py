"""Requests a broker passes on: JSON produce/read to a partition's leader, admin to the controller, and a
client's group request relayed as it is to the group's coordinator.

A client may send its JSON produce or read to any broker; the broker forwards the
already-encoded batch to the leader's binary endpoint (or reads raw batches from
it), so the leader does exactly the work it would do for a direct client. Errors
come back as the leader's JSON error bodies and are decoded through the error table
(``broker.error_table``), so the client sees the leader's ``error_code``, HTTP status
and ``retriable`` unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import aiohttp

from broker.acks import Acks
from broker.descriptions import FetchResult
from broker.error_table import decode_error_body
from broker.errors import LeaderNotAvailable, NotLeaderOrFollower, ServiceUnavailable
from broker.isolation import Isolation
from broker.record.committed import parse_aborted
from broker.waiting import RetryDeadline

BATCH_CONTENT_TYPE = "application/vnd.kafka.batch.v2"
LEADERSHIP_SETTLE_S = 3.0
"""How long a forwarded JSON read waits for a moving leadership before answering its error."""
LEADERSHIP_RETRY_INITIAL_S = 0.05
LEADERSHIP_RETRY_MAX_S = 0.4

T = TypeVar("T")


async def retry_while_leadership_moves(call: Callable[[], Awaitable[T]], settle_s: float = LEADERSHIP_SETTLE_S) -> T:
    """Run ``call`` again while it fails because leadership is moving, for up to ``settle_s``.

    A JSON reader may ask any broker and cannot re-route itself, so while a leader
    election is in flight (this broker's view or the one it forwarded to is a step
    behind, or the partition is between leaders) the broker retries for it, as the
    REST Proxy's embedded consumer does. Only for reads: retrying a produce whose
    outcome is unknown could append it twice. After ``settle_s`` the error stands.
    """
    retry = RetryDeadline(settle_s, LEADERSHIP_RETRY_INITIAL_S, LEADERSHIP_RETRY_MAX_S)
    while True:
        try:
            return await call()
        except (NotLeaderOrFollower, LeaderNotAvailable):
            if not await retry.pause():
                raise


async def _raise_for_error(reply: aiohttp.ClientResponse, target: str) -> None:
    if reply.status < 400:
        return
    try:
        body = await reply.json(content_type=None)
    except (ValueError, aiohttp.ContentTypeError):
        body = {}
    error = decode_error_body(body, reply.status)
    if error is None:
        raise ServiceUnavailable(f"{target} answered HTTP {reply.status}")
    raise error


@dataclass(frozen=True)
class RelayedReply:
    """Another broker's answer to a relayed request, as it came: any status, its body's bytes."""

    status: int
    content_type: str
    body: bytes


class Forwarder:
    """HTTP calls to other brokers on behalf of a client request."""

    def __init__(self, session: aiohttp.ClientSession, cluster_id: str) -> None:
        self._session = session
        self._cluster_id = cluster_id

    async def _call(self, method: str, url: str, timeout_s: float, **kwargs) -> tuple[bytes, dict[str, str]]:
        try:
            async with self._session.request(
                method, url, timeout=aiohttp.ClientTimeout(total=timeout_s), **kwargs
            ) as reply:
                await _raise_for_error(reply, url)
                return await reply.read(), dict(reply.headers)
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            raise ServiceUnavailable(f"could not reach broker at {url}: {error or type(error).__name__}") from None

    def _partition_url(self, base_url: str, topic: str, partition: int) -> str:
        return f"{base_url}/v3/clusters/{self._cluster_id}/topics/{topic}/partitions/{partition}"

    async def produce(
        self, leader_url: str, topic: str, partition: int, batch: bytes, acks: Acks, timeout_ms: int
    ) -> dict:
        body, _ = await self._call(
            "POST",
            f"{self._partition_url(leader_url, topic, partition)}/batches",
            timeout_ms / 1000 + 5,
            params={"acks": acks.value, "timeout_ms": str(timeout_ms)},
            data=batch,
            headers={"Content-Type": BATCH_CONTENT_TYPE},
        )
        return json.loads(body)

    async def fetch(
        self,
        leader_url: str,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        timeout_ms: int,
        isolation: Isolation,
    ) -> FetchResult:
        body, headers = await self._call(
            "GET",
            f"{self._partition_url(leader_url, topic, partition)}/records",
            timeout_ms / 1000 + 5,
            params={
                "offset": str(offset),
                "max_bytes": str(max_bytes),
                "timeout_ms": str(timeout_ms),
                "isolation": isolation.value,
            },
            headers={"Accept": BATCH_CONTENT_TYPE},
        )
        high_watermark = headers["X-High-Watermark"]
        return FetchResult(
            data=body,
            high_watermark=int(high_watermark),
            log_start_offset=int(headers["X-Log-Start-Offset"]),
            log_end_offset=int(headers.get("X-Log-End-Offset", high_watermark)),
            last_stable_offset=int(headers.get("X-Last-Stable-Offset", high_watermark)),
            aborted=parse_aborted(headers.get("X-Aborted-Transactions")),
        )

    async def offset_for_timestamp(self, leader_url: str, topic: str, partition: int, timestamp_ms: int) -> int | None:
        """The leader's answer to ``GET …/offset?timestamp=``: the first offset at or after it, or None."""
        body, _ = await self._call(
            "GET",
            f"{self._partition_url(leader_url, topic, partition)}/offset",
            10.0,
            params={"timestamp": str(timestamp_ms)},
        )
        return json.loads(body).get("offset")

    async def relay(
        self, method: str, url: str, body: bytes | None, headers: Mapping[str, str], timeout_s: float
    ) -> RelayedReply:
        """A client's request passed on to the broker that answers it, and its answer passed back as it is
        (an error status included: it is already the client's answer). The transport's failures
        (``TimeoutError``, ``aiohttp.ClientError``, ``OSError``) reach the caller, which names what it could not reach."""
        async with self._session.request(
            method, url, data=body, headers=dict(headers), timeout=aiohttp.ClientTimeout(total=timeout_s)
        ) as reply:
            return RelayedReply(reply.status, reply.content_type, await reply.read())

    async def json_call(self, method: str, url: str, body: dict | None = None, timeout_s: float = 30.0) -> dict:
        raw, _ = await self._call(method, url, timeout_s, json=body)
        return json.loads(raw) if raw else {}
