"""The cluster metadata store interface shared by the sqlite and etcd backends.

The controller and the brokers keep cluster metadata (``/controller``,
``/brokers/<id>``, partition records) in a small key-value store with etcd's data
model, because etcd's model is exactly what a controller needs:

* **One store-wide revision counter.** Every write gets the next revision; a key
  carries ``create_revision`` (the write that created it) and ``mod_revision`` (the
  last write to it). The mod revision of ``/controller`` therefore serves as the
  controller epoch, and a watcher that remembers the last revision it saw can resume.
* **Compare-and-set on a revision** (``put_if``/``delete_if``): the only way to
  update shared records safely from several brokers.
* **Fenced compare-and-set** (``put_if_fenced``/``delete_if_fenced``): the same CAS,
  applied in one atomic step only while a second key (the fence, e.g.
  ``/controller``) still has the ``mod_revision`` the writer holds. A deposed
  controller's write therefore cannot land, not even in the round trip between
  checking the fence and writing.
* **Leases**: keys bound to a lease vanish, with a delete event, when the holder
  stops calling ``keep_alive`` (it crashed, was paused, or lost its network).
* **Watches from a revision**: every change with revision >= ``from_revision``,
  delivered exactly once and in revision order. History older than the store's
  compaction point raises ``CompactedError``; the caller then re-lists and watches
  from ``list``'s revision + 1.

Invariants every implementation keeps (the contract tests in ``tests/metastore``
check them against both backends):

* revisions are positive and strictly increase with every successful write;
* ``put_if(key, v, 0)`` succeeds only if ``key`` is absent; ``put_if(key, v, r)``
  with ``r > 0`` only if ``key``'s ``mod_revision == r``; at most one of several
  concurrent CASes on the same expected revision succeeds;
* ``put_if_fenced``/``delete_if_fenced`` apply only if the key's CAS holds AND
  ``fence_key``'s ``mod_revision == fence_revision`` (> 0), both judged at the
  same revision: a fence key rewritten, deleted or never created fails the write
  with no effect;
* a lease-bound key is deleted (and a delete event emitted) at most a poll period
  after its lease expires or is revoked, even if the holder process was killed.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal

import structlog

log = structlog.get_logger(__name__)

WatchEventType = Literal["put", "delete"]

MAX_PUT_BATCH = 127
"""The most keys one ``put_all_if`` or ``put_all_fenced`` writes: with a fence's, 128 comparisons, etcd's default limit."""


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One key as stored; ``lease`` is None when the key is not bound to a lease."""

    key: str
    value: bytes
    mod_revision: int
    create_revision: int
    lease: int | None


@dataclass(frozen=True, slots=True)
class Lease:
    """A granted lease. ``ttl_ms`` is what the store granted, which may be longer
    than requested (etcd grants whole seconds and enforces a minimum)."""

    id: int
    ttl_ms: int


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One change. For deletes ``value`` is empty and ``mod_revision`` is the
    revision of the delete itself."""

    type: WatchEventType
    key: str
    value: bytes
    mod_revision: int


def require_fence_revision(fence_key: str, fence_revision: int) -> None:
    """Reject a non-positive fence revision: 0 would match an absent fence key in
    etcd's comparison, silently turning the fence off."""
    if fence_revision <= 0:
        raise ValueError(f"fence revision of {fence_key} must be positive, got {fence_revision}")


def require_put_batch(items: Sequence[tuple[str, bytes, int]]) -> None:
    """Reject a batch ``put_all_if``/``put_all_fenced`` cannot write in one step: empty, too long, or a key twice."""
    if not 0 < len(items) <= MAX_PUT_BATCH:
        raise ValueError(f"a batch writes 1 to {MAX_PUT_BATCH} keys, got {len(items)}")
    if len({key for key, _, _ in items}) != len(items):
        raise ValueError("a batch names a key twice")


class MetadataStoreError(Exception):
    """Base of the metadata store's own errors."""


class CompactedError(MetadataStoreError):
    """The requested history is gone; re-list the prefix and watch from
    ``list``'s revision + 1 (``current_revision`` is a hint of where the store is)."""

    def __init__(self, requested_revision: int, compact_revision: int, current_revision: int) -> None:
        super().__init__(
            f"revision {requested_revision} is compacted (history kept from revision "
            f"{compact_revision}, current revision {current_revision}); re-list and "
            f"watch from the listed revision + 1"
        )
        self.requested_revision = requested_revision
        self.compact_revision = compact_revision
        self.current_revision = current_revision


class LeaseNotFoundError(MetadataStoreError):
    """A put named a lease that does not exist (never granted, expired or revoked)."""


class StoreUnavailableError(MetadataStoreError):
    """The store could not be reached. For writes the outcome is unknown: the write
    may have been applied. Re-read before retrying (CAS makes a retry safe)."""


class UnsupportedFilesystemError(MetadataStoreError):
    """The sqlite file lives on a network filesystem, where its locking is unsafe."""


class MetadataStore(abc.ABC):
    """Async key-value store with revisions, CAS, leases and watches (etcd's model).

    Keys are ``str`` (conventionally ``/``-separated paths), values ``bytes``.
    """

    @abc.abstractmethod
    async def get(self, key: str) -> KeyValue | None:
        """The key's current value and revisions, or None if absent."""

    @abc.abstractmethod
    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        """All keys starting with ``prefix`` (sorted by key) and the store revision
        at which they were read; watch from that revision + 1 to miss nothing."""

    @abc.abstractmethod
    async def put(self, key: str, value: bytes, lease: int | None = None) -> int:
        """Unconditional write; returns its revision. Raises ``LeaseNotFoundError``."""

    @abc.abstractmethod
    async def put_if(self, key: str, value: bytes, expected_revision: int, lease: int | None = None) -> int | None:
        """Compare-and-set. ``expected_revision == 0`` means "only if absent", else the
        key's ``mod_revision`` must equal it. Returns the new revision, or None if
        the comparison failed. Raises ``LeaseNotFoundError``."""

    @abc.abstractmethod
    async def delete_if(self, key: str, expected_revision: int) -> bool:
        """Delete ``key`` only if its ``mod_revision`` equals ``expected_revision``."""

    @abc.abstractmethod
    async def put_if_fenced(
        self,
        key: str,
        value: bytes,
        expected_revision: int,
        fence_key: str,
        fence_revision: int,
        lease: int | None = None,
    ) -> int | None:
        """``put_if`` that also requires ``fence_key``'s ``mod_revision`` to equal
        ``fence_revision``, checked in the same atomic step as the write (no window
        in which the fence can move). Returns the new revision, or None if either
        comparison failed (nothing written). ``fence_revision`` must be positive:
        a fence is always a key that exists. Raises ``LeaseNotFoundError``."""

    @abc.abstractmethod
    async def put_all_if(self, items: Sequence[tuple[str, bytes, int]]) -> int | None:
        """Write every ``(key, value, expected_revision)`` of ``items`` in one atomic step, each
        only if its ``mod_revision`` is the expected one (0: the key is absent); the revision
        of the last write, or None if any key is not as expected (nothing written). At most
        ``MAX_PUT_BATCH`` items. Kafka's AlterPartition carries many partitions' changes in
        one request; this is its one write."""

    @abc.abstractmethod
    async def put_all_fenced(
        self, items: Sequence[tuple[str, bytes, int]], fence_key: str, fence_revision: int
    ) -> int | None:
        """Write every ``(key, value, expected_revision)`` of ``items`` in one atomic step, each
        only if its ``mod_revision`` is the expected one (0: the key is absent), guarded by the
        fence as ``put_if_fenced``; the revision of the last write, or None if the fence moved
        or any key is not as expected (nothing written). At most ``MAX_PUT_BATCH`` items."""

    @abc.abstractmethod
    async def delete_if_fenced(self, key: str, expected_revision: int, fence_key: str, fence_revision: int) -> bool:
        """``delete_if`` that also requires ``fence_key``'s ``mod_revision`` to equal
        ``fence_revision`` (> 0), in the same atomic step; False deletes nothing."""

    @abc.abstractmethod
    async def grant(self, ttl_ms: int) -> Lease:
        """A new lease expiring ``ttl_ms`` (or the granted ttl) from now."""

    @abc.abstractmethod
    async def keep_alive(self, lease_id: int) -> bool:
        """Push the lease's expiry a full ttl forward; False if it already expired."""

    @abc.abstractmethod
    async def revoke(self, lease_id: int) -> None:
        """End the lease now, deleting its keys. Unknown leases are ignored."""

    @abc.abstractmethod
    def watch(self, prefix: str, from_revision: int) -> AsyncIterator[WatchEvent]:
        """Every change under ``prefix`` with revision >= ``from_revision`` (>= 1),
        in order, then live changes, until the iterator is closed.

        Use as ``async for event in store.watch(prefix, rev)``; close it with
        ``contextlib.aclosing`` when leaving early. Raises ``CompactedError`` while
        iterating when ``from_revision`` is older than the kept history.
        """

    @abc.abstractmethod
    async def compact(self, revision: int) -> None:
        """Drop change history below ``revision`` (as etcd's compaction does); watches
        from an older revision raise ``CompactedError``. Current key values are never
        affected."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release connections and background tasks. Leases are NOT revoked: they
        expire on their own, exactly as if this process had crashed."""


async def keep_lease_alive(store: MetadataStore, lease: Lease, interval_ms: int | None = None) -> None:
    """Renew ``lease`` every ``interval_ms`` (default a third of its ttl) until it is
    lost, then return. Run it as a task; cancel it to stop renewing.

    Returning means the lease expired (this process was too slow, or partitioned):
    every key bound to it is gone, and the caller must stop acting on it (e.g. step
    down as controller).
    """
    period_ms = interval_ms if interval_ms is not None else max(lease.ttl_ms // 3, 50)
    while True:
        await asyncio.sleep(period_ms / 1000)
        try:
            alive = await store.keep_alive(lease.id)
        except StoreUnavailableError as error:
            log.warning("lease_keep_alive_failed", lease_id=lease.id, error=str(error))
            continue
        if not alive:
            log.warning("lease_lost", lease_id=lease.id, ttl_ms=lease.ttl_ms)
            return
