"""The production metadata store: etcd v3 (3.4+) through the ``aetcd`` asyncio gRPC client.

Why ``aetcd`` and not etcd's JSON gateway: ``aetcd`` 1.0 works here (against etcd
3.4 with grpcio 1.85 / protobuf 7), speaks native gRPC with streaming watches, and
exposes everything this store needs: ranges, ``Txn`` with mod/create-revision
comparisons, lease grant/keep-alive/revoke and watches from a start revision with
``RevisionCompactedError``.

How the contract maps onto etcd:

* CAS is one ``Txn``: compare ``mod_revision == expected`` (or ``create_revision ==
  0`` for "absent"), then put/delete. etcd's revision is already store-wide. A
  fenced CAS adds ``mod_revision(fence_key) == fence_revision`` to the same ``Txn``,
  so etcd judges both comparisons and applies the write at one revision.
* Leases are etcd leases. etcd grants whole seconds (at least 1 s), so ``grant``
  rounds ``ttl_ms`` up and reports the granted ttl. etcd checks expiry every 500 ms.
* Watches are re-established from ``last_seen_revision + 1`` after any disconnect,
  so a caller's iterator survives etcd restarts and endpoint failover without losing
  or repeating events; a compacted start revision raises ``CompactedError``.
* Several endpoints: the client talks to one at a time and moves to the next when a
  connection cannot be made. Reads, keep-alives and watches are retried on the next
  endpoint; a write that failed after it was sent raises ``StoreUnavailableError``
  (outcome unknown — re-read, then retry; CAS makes that safe). Each store starts at an
  endpoint of its own (at random), so the brokers of a cluster do not all talk to the
  same member first.
* A keep-alive attempt is given a sixth of the lease's ttl (at least
  ``MIN_KEEP_ALIVE_ATTEMPT_S``), then the next endpoint is tried at once. A member cut
  off from the network answers nothing, so a call to it waits for its deadline; with the
  request timeout (5 s) against a 6 s session, every broker talking to a cut-off member
  lost its lease before it moved to another member. Dropping the silent connection also
  moves the store's watches, which would otherwise hear nothing from that member.
* A watch that fails drops its connection too: on a connection that had gone silent (a
  host cut off and back) a broker's watches were re-created one at a time, 5 s apart, and
  its view stayed stale for 8 s after the link returned, the broker still acting as leader
  of a partition that had moved.
* Each watch is a gRPC stream of its own (``etcd_watch``), not one of aetcd's watches,
  which share a stream and can hand one watch another's events.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import aetcd
import grpc
import structlog
from aetcd import rpc
from aetcd import transactions as etcd_ops

from broker.backoff import Backoff
from broker.cluster.etcd_watch import RangeWatch, WatchCompactedError, WatchEndedError
from broker.cluster.store import (
    CompactedError,
    KeyValue,
    Lease,
    LeaseNotFoundError,
    MetadataStore,
    StoreUnavailableError,
    WatchEvent,
    require_fence_revision,
    require_put_batch,
)

log = structlog.get_logger(__name__)

T = TypeVar("T")

MIN_KEEP_ALIVE_ATTEMPT_S = 0.25
"""The least a keep-alive attempt is given (a sixth of a 1 s lease would be 167 ms): an answer
slower than that on a loaded machine is not a dead member, and each timeout drops the connection."""

_CONNECTION_ERRORS = (aetcd.ConnectionFailedError, aetcd.ConnectionTimeoutError)
_UNAVAILABLE_TEXTS = (
    "context deadline exceeded",
    "context canceled",
    "request timed out",
    "leader changed",
    "no leader",
    "too many requests",
)
"""etcd's words (its ``rpctypes`` errors, gRPC's context errors) for a request it did not carry out."""
WATCH_RETRY_BACKOFF_S = 0.1
WATCH_RETRY_BACKOFF_MAX_S = 2.0


def key_range(prefix: str) -> tuple[bytes, bytes]:
    """etcd's ``[key, range_end)`` for every key starting with ``prefix``."""
    start = prefix.encode()
    stripped = start.rstrip(b"\xff")
    if not stripped:
        return (start or b"\0"), b"\0"  # b"\0" as range_end means "to the end"
    return start, stripped[:-1] + bytes([stripped[-1] + 1])


def _key_value(raw: Any) -> KeyValue:
    return KeyValue(
        key=raw.key.decode(),
        value=bytes(raw.value),
        mod_revision=raw.mod_revision,
        create_revision=raw.create_revision,
        lease=raw.lease or None,
    )


def _key_compare(client: aetcd.Client, key: str, expected_revision: int) -> Any:
    """CAS comparison: ``expected_revision == 0`` means absent (never created, or
    deleted since), else the key's ``mod_revision`` must equal it."""
    if expected_revision == 0:
        return client.transactions.create(key.encode()) == 0
    return client.transactions.mod(key.encode()) == expected_revision


def _fence_compare(client: aetcd.Client, fence_key: str, fence_revision: int) -> Any:
    """The fence holds while ``fence_key``'s ``mod_revision`` is ``fence_revision``
    (> 0, so an absent fence key, whose mod revision reads 0, never matches)."""
    return client.transactions.mod(fence_key.encode()) == fence_revision


async def _channel_became_ready(channel: Any, timeout_s: float) -> bool:
    """Wait until the gRPC channel is READY; give up at once on TRANSIENT_FAILURE
    (e.g. connection refused) so failover to the next endpoint is fast."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    state = channel.get_state(try_to_connect=True)
    while state != grpc.ChannelConnectivity.READY:
        remaining_s = deadline - asyncio.get_running_loop().time()
        if state == grpc.ChannelConnectivity.TRANSIENT_FAILURE or remaining_s <= 0:
            return False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(remaining_s):
                await channel.wait_for_state_change(state)
        state = channel.get_state(try_to_connect=True)
    return True


def _is_lease_not_found(error: Exception) -> bool:
    return "lease not found" in str(error)


def _cancelled_by_a_closed_channel() -> bool:
    """Whether a ``CancelledError`` the running task caught came from gRPC, not from a cancel.

    grpc's asyncio calls raise ``CancelledError`` when their channel is closed under them,
    as ``_drop_client`` does after another call on the same connection went unanswered. A
    task nobody cancelled has nothing to stop for: the call failed, like a lost connection.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() == 0


def _call_failure(error: BaseException, attempt_timeout_s: float | None) -> str | None:
    """What went wrong when ``error`` is a failed call (tried again on the next endpoint), or
    None when it is etcd's answer or a real cancel (raised to the caller)."""
    if isinstance(error, TimeoutError):
        return f"no answer within {attempt_timeout_s} s"
    if isinstance(error, asyncio.CancelledError):
        return "the connection was closed under the call" if _cancelled_by_a_closed_channel() else None
    return str(error) if isinstance(error, Exception) and is_unavailable(error) else None


_WATCH_FAILURES = (
    aetcd.ClientError,
    StoreUnavailableError,
    grpc.aio.AioRpcError,
    grpc.aio.UsageError,
    TimeoutError,
    WatchEndedError,
)
"""What ends a watch that is watched again: the store's connection failing, or the member not
confirming, refusing or ending it. A watch raises only compaction to its caller: a view whose
watch raised anything else stopped following the store without a word."""


def _watch_failure(error: Exception) -> str:
    """What a failed watch met, for its log line."""
    if isinstance(error, TimeoutError):
        return "the member did not confirm the watch within the request timeout"
    if isinstance(error, grpc.aio.AioRpcError):
        return f"{error.code().name}: {error.details()}"
    return str(error) or type(error).__name__


def _watch_event(raw: Any) -> WatchEvent:
    put = raw.type == rpc.Event.PUT
    return WatchEvent(
        type="put" if put else "delete",
        key=raw.kv.key.decode(),
        value=bytes(raw.kv.value) if put else b"",
        mod_revision=raw.kv.mod_revision,
    )


def is_unavailable(error: Exception) -> bool:
    """Whether ``error`` is a failed call rather than etcd's answer to it: a lost connection or a
    request etcd gave up on (a timeout, a leader election under way).
    aetcd maps only some gRPC codes to its connection errors; etcd reports the others as a plain
    ``ClientError`` whose text says so. Raised as such, one killed the broker's lease keep-alive task while it was
    cut off from etcd, and the broker never registered again once the link returned."""
    if isinstance(error, _CONNECTION_ERRORS):
        return True
    return isinstance(error, aetcd.ClientError) and any(text in str(error) for text in _UNAVAILABLE_TEXTS)


class EtcdMetadataStore(MetadataStore):
    """``MetadataStore`` on an etcd cluster; see the module docstring."""

    def __init__(
        self,
        endpoints: list[tuple[str, int]],
        request_timeout_s: float = 5.0,
        connect_timeout_s: float = 2.0,
        first_endpoint: int | None = None,
    ) -> None:
        """``first_endpoint``: the index of the endpoint tried first (at random when None)."""
        if not endpoints:
            raise ValueError("at least one etcd endpoint is required")
        self.endpoints = endpoints
        self.request_timeout_s = request_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._endpoint_index = random.randrange(len(endpoints)) if first_endpoint is None else first_endpoint
        self._lease_ttl_ms: dict[int, int] = {}
        """The ttl of each lease granted here: what bounds an attempt to keep it alive."""
        self._client: aetcd.Client | None = None
        self._connect_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def open(cls, endpoints: list[tuple[str, int]]) -> EtcdMetadataStore:
        store = cls(endpoints)
        await store._connected_client()
        return store

    # ---- connection management -------------------------------------------------

    async def _connected_client(self) -> aetcd.Client:
        """A client whose channel is READY, trying each endpoint once, in turn."""
        if self._closed:
            raise StoreUnavailableError("etcd metadata store is closed")
        async with self._connect_lock:
            client = self._client
            if (
                client is not None
                and client.channel is not None
                and client.channel.get_state(try_to_connect=True) == grpc.ChannelConnectivity.READY
            ):
                return client
            for _ in range(len(self.endpoints)):
                host, port = self.endpoints[self._endpoint_index]
                if client is None:
                    client = aetcd.Client(host=host, port=port, timeout=self.request_timeout_s)
                    await client.connect()
                if not await _channel_became_ready(client.channel, self.connect_timeout_s):
                    log.warning("etcd_endpoint_unreachable", endpoint=f"{host}:{port}")
                    await client.close()
                    client = None
                    self._endpoint_index = (self._endpoint_index + 1) % len(self.endpoints)
                    continue
                self._client = client
                return client
            self._client = None
            raise StoreUnavailableError(f"no etcd endpoint reachable among {self._endpoint_names()}")

    def _endpoint_names(self) -> list[str]:
        return [f"{host}:{port}" for host, port in self.endpoints]

    async def _drop_client(self, failed: aetcd.Client) -> None:
        """Forget a client whose connection failed; the next call reconnects."""
        async with self._connect_lock:
            if self._client is failed:
                self._client = None
                self._endpoint_index = (self._endpoint_index + 1) % len(self.endpoints)
        with contextlib.suppress(Exception):
            await failed.close()

    async def _call(
        self,
        operation: Callable[[aetcd.Client], Awaitable[T]],
        retriable: bool,
        attempt_timeout_s: float | None = None,
    ) -> T:
        """Run ``operation``; on a connection failure (or no answer within ``attempt_timeout_s``)
        retry on the next endpoint if ``retriable`` (reads, keep-alives), else raise
        ``StoreUnavailableError``."""
        attempts = len(self.endpoints) + 1 if retriable else 1
        last_failure: str | None = None
        for _ in range(attempts):
            client = await self._connected_client()
            try:
                async with asyncio.timeout(attempt_timeout_s):
                    return await operation(client)
            except (aetcd.ClientError, TimeoutError, asyncio.CancelledError) as error:
                last_failure = _call_failure(error, attempt_timeout_s)
                if last_failure is None:
                    raise
                log.warning("etcd_call_failed", error=last_failure, retriable=retriable)
                await self._drop_client(client)
        raise StoreUnavailableError(f"etcd request failed (outcome unknown for writes): {last_failure}")

    # ---- key-value operations --------------------------------------------------

    async def get(self, key: str) -> KeyValue | None:
        result = await self._call(lambda client: client.get(key.encode()), retriable=True)
        return None if result is None else _key_value(result)

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        start, end = key_range(prefix)
        result = await self._call(lambda client: client.get_range(start, end), retriable=True)
        return [_key_value(raw) for raw in result.kvs], result.header.revision

    async def _current_revision(self) -> int:
        start, end = key_range("\0hw-revision-probe")
        result = await self._call(lambda client: client.get_range(start, end), retriable=True)
        return int(result.header.revision)

    async def put(self, key: str, value: bytes, lease: int | None = None) -> int:
        try:
            result = await self._call(lambda client: client.put(key.encode(), value, lease=lease or 0), retriable=False)
        except aetcd.ClientError as error:
            if _is_lease_not_found(error):
                raise LeaseNotFoundError(f"lease {lease} does not exist (expired or revoked)") from error
            raise
        return int(result.header.revision)

    async def _transaction(
        self, compare: Callable[[aetcd.Client], builtins.list[Any]], success: builtins.list[Any]
    ) -> tuple[bool, builtins.list[Any]]:
        async def run(client: aetcd.Client) -> tuple[bool, list[Any]]:
            return await client.transaction(compare=compare(client), success=success, failure=[])

        return await self._call(run, retriable=False)

    async def put_if(self, key: str, value: bytes, expected_revision: int, lease: int | None = None) -> int | None:
        return await self._put_when(key, value, lease, lambda client: [_key_compare(client, key, expected_revision)])

    async def delete_if(self, key: str, expected_revision: int) -> bool:
        if expected_revision <= 0:
            return False
        return await self._delete_when(key, lambda client: [_key_compare(client, key, expected_revision)])

    async def put_if_fenced(
        self,
        key: str,
        value: bytes,
        expected_revision: int,
        fence_key: str,
        fence_revision: int,
        lease: int | None = None,
    ) -> int | None:
        require_fence_revision(fence_key, fence_revision)

        def compare(client: aetcd.Client) -> list[Any]:
            return [_fence_compare(client, fence_key, fence_revision), _key_compare(client, key, expected_revision)]

        return await self._put_when(key, value, lease, compare)

    async def put_all_if(self, items: Sequence[tuple[str, bytes, int]]) -> int | None:
        return await self._put_all_when(items, [])

    async def put_all_fenced(
        self, items: Sequence[tuple[str, bytes, int]], fence_key: str, fence_revision: int
    ) -> int | None:
        require_fence_revision(fence_key, fence_revision)
        return await self._put_all_when(items, [(fence_key, fence_revision)])

    async def _put_all_when(
        self, items: Sequence[tuple[str, bytes, int]], fences: builtins.list[tuple[str, int]]
    ) -> int | None:
        """Every item's compare-and-set in one ``Txn``, guarded by each ``(fence_key, revision)`` too."""
        require_put_batch(items)

        def compare(client: aetcd.Client) -> builtins.list[Any]:
            return [_fence_compare(client, key, revision) for key, revision in fences] + [
                _key_compare(client, key, expected) for key, _, expected in items
            ]

        puts = [etcd_ops.Put(key.encode(), value) for key, value, _ in items]
        succeeded, responses = await self._transaction(compare, puts)
        return int(responses[-1].response_put.header.revision) if succeeded else None

    async def delete_if_fenced(self, key: str, expected_revision: int, fence_key: str, fence_revision: int) -> bool:
        require_fence_revision(fence_key, fence_revision)
        if expected_revision <= 0:
            return False

        def compare(client: aetcd.Client) -> list[Any]:
            return [_fence_compare(client, fence_key, fence_revision), _key_compare(client, key, expected_revision)]

        return await self._delete_when(key, compare)

    async def _put_when(
        self, key: str, value: bytes, lease: int | None, compare: Callable[[aetcd.Client], builtins.list[Any]]
    ) -> int | None:
        """Put ``key`` in one ``Txn`` guarded by every comparison in ``compare``."""
        put = etcd_ops.Put(key.encode(), value, lease=lease or 0)
        try:
            succeeded, responses = await self._transaction(compare, [put])
        except aetcd.ClientError as error:
            if _is_lease_not_found(error):
                raise LeaseNotFoundError(f"lease {lease} does not exist (expired or revoked)") from error
            raise
        return int(responses[0].response_put.header.revision) if succeeded else None

    async def _delete_when(self, key: str, compare: Callable[[aetcd.Client], builtins.list[Any]]) -> bool:
        """Delete ``key`` in one ``Txn`` guarded by every comparison in ``compare``."""
        succeeded, _ = await self._transaction(compare, [etcd_ops.Delete(key.encode())])
        return bool(succeeded)

    async def compact(self, revision: int) -> None:
        try:
            await self._call(lambda client: client.compact(revision), retriable=True)
        except aetcd.ClientError as error:
            if "compacted" not in str(error):
                raise

    # ---- leases ----------------------------------------------------------------

    async def grant(self, ttl_ms: int) -> Lease:
        if ttl_ms <= 0:
            raise ValueError(f"lease ttl_ms must be positive, got {ttl_ms}")
        ttl_s = max(1, math.ceil(ttl_ms / 1000))
        granted = await self._call(lambda client: client.lease(ttl_s), retriable=True)
        lease = Lease(id=int(granted.id), ttl_ms=int(granted.ttl) * 1000)
        self._lease_ttl_ms[lease.id] = lease.ttl_ms
        return lease

    async def keep_alive(self, lease_id: int) -> bool:
        ttl_ms = self._lease_ttl_ms.get(lease_id)
        attempt_timeout_s = (
            max(ttl_ms / 6000, MIN_KEEP_ALIVE_ATTEMPT_S) if ttl_ms is not None else self.request_timeout_s
        )
        reply = await self._call(
            lambda client: client.refresh_lease(lease_id), retriable=True, attempt_timeout_s=attempt_timeout_s
        )
        alive = reply is not None and reply.TTL > 0
        if not alive:
            self._lease_ttl_ms.pop(lease_id, None)
        return alive

    async def revoke(self, lease_id: int) -> None:
        self._lease_ttl_ms.pop(lease_id, None)
        try:
            await self._call(lambda client: client.revoke_lease(lease_id), retriable=True)
        except aetcd.ClientError as error:
            if not _is_lease_not_found(error):
                raise

    # ---- watches ---------------------------------------------------------------

    async def watch(self, prefix: str, from_revision: int) -> AsyncIterator[WatchEvent]:
        if from_revision < 1:
            raise ValueError(f"from_revision must be >= 1, got {from_revision}")
        start, end = key_range(prefix)
        next_revision = from_revision
        backoff = Backoff(WATCH_RETRY_BACKOFF_S, WATCH_RETRY_BACKOFF_MAX_S)
        while not self._closed:
            client: aetcd.Client | None = None
            watch: RangeWatch | None = None
            try:
                client = await self._connected_client()
                watch = RangeWatch(client.channel, start, end, next_revision)
                async with asyncio.timeout(self.request_timeout_s):
                    await watch.created()
                backoff.reset()
                async with contextlib.aclosing(watch.events()) as raw_events:
                    async for raw in raw_events:
                        event = _watch_event(raw)
                        next_revision = event.mod_revision + 1
                        yield event
                failure = "the member ended the watch stream"
            except WatchCompactedError as error:
                current = await self._current_revision()
                raise CompactedError(next_revision, error.compacted_revision, current) from error
            except asyncio.CancelledError:
                if not _cancelled_by_a_closed_channel():
                    raise
                failure = "the connection was closed under the watch"
            except _WATCH_FAILURES as error:
                failure = _watch_failure(error)
            finally:
                if watch is not None:
                    watch.cancel()
            log.warning("etcd_watch_reconnecting", prefix=prefix, next_revision=next_revision, error=failure)
            if client is not None:
                await self._drop_client(client)
            if not self._closed:
                await asyncio.sleep(backoff.next_delay())

    async def close(self) -> None:
        self._closed = True
        client, self._client = self._client, None
        if client is not None:
            await client.close()
