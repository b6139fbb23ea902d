"""The embedded metadata store: one sqlite file shared by every broker process on ONE host.

Why it is safe for many processes:

* WAL mode, ``busy_timeout`` and a retry on ``database is locked``.
* Every read-modify-write runs in ``BEGIN IMMEDIATE``: the write lock is taken before
  the read, so a CAS compares against a value nobody can change until it commits (a
  deferred ``BEGIN`` -> SELECT -> UPDATE would fail with SQLITE_BUSY under contention).
* Revisions come from one counter row bumped inside the same transaction, so they are
  store-wide and strictly increasing, like etcd's.
* Lease expiry is a wall-clock deadline in ms (all processes share the host clock).
  Any live client deletes the keys of expired leases — in every write transaction
  and on every poll — so keys of a SIGKILLed holder still vanish within a poll period
  (default 15 ms) of their expiry.
* A stall is not counted against a lease. Every write records when it took the write
  lock; a writer that then waited for the lock at least ``STALL_MIN_MS`` (one commit whose
  fsync stalled on a loaded disk) pushes every lease alive when the previous write took
  the lock on by the time since, before it sweeps: otherwise the first write after a
  stall longer than a ttl swept every lease at once, although each holder had been
  trying to renew all along. etcd refreshes its leases for the same reason when it
  becomes available again. A quiet spell with nobody waiting forgives nothing, so the
  lease of a holder that died still expires a ttl after its last renewal, later only by
  the stalls in between.
* Watches are served from a change-log table. Each store polls the store-wide
  revision and wakes its watchers when it moved; its own writes wake them directly
  when they made a revision. A lease keep-alive makes none, so the brokers' heartbeats
  wake no watcher (with ``PRAGMA data_version``, every keep-alive of every broker woke
  every watcher of every other one). The log keeps the last ``changelog_retention``
  revisions; older watches raise ``CompactedError``.

It is single-host by design: sqlite's file locking is unreliable on network
filesystems, so opening a file on nfs/cifs/sshfs/... raises
``UnsupportedFilesystemError``. Use the etcd store to span machines.

All sqlite calls run on one dedicated thread per store object, which owns the
connection, except the poll's probe: the revision and the next lease expiry,
two reads of a few µs, run on the event loop through a read connection of its own.
Handing each 15 ms poll to the thread instead cost an idle broker about 3 % of a core
(a thread wake-up and a loop wake-up per poll, 66 times a second); a probe that finds
an expired lease hands the sweep, a write, to the thread.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import structlog

from broker.backoff import Backoff
from broker.clock import wall_clock_ms
from broker.cluster.sqlite_fs import ensure_local_filesystem
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

BUSY_TIMEOUT_MS = 5000
LOCKED_RETRIES = 5
LOCKED_RETRY_INITIAL_S = 0.01
LOCKED_RETRY_MAX_S = 0.16
POLL_INTERVAL_MS = 15
STALL_MIN_MS = 500
"""A wait for the write lock this long is a stall; a busy but working store hands the lock
on sooner."""
WATCH_BATCH_ROWS = 512
PRUNE_EVERY_REVISIONS = 64

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO meta (name, value) VALUES ('revision', 0), ('compact_revision', 0), ('last_write_started_ms', 0)",
    "CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value BLOB NOT NULL,"
    " create_revision INTEGER NOT NULL, mod_revision INTEGER NOT NULL, lease_id INTEGER)",
    "CREATE INDEX IF NOT EXISTS kv_by_lease ON kv (lease_id) WHERE lease_id IS NOT NULL",
    # AUTOINCREMENT: a lease id is never reused, so it can serve as a fencing token.
    "CREATE TABLE IF NOT EXISTS leases (id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " ttl_ms INTEGER NOT NULL, expiry_ms INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS leases_by_expiry ON leases (expiry_ms)",
    "CREATE TABLE IF NOT EXISTS changelog (revision INTEGER PRIMARY KEY,"
    " type TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL)",
)


def prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix``
    (UTF-8 byte order equals code point order, which is sqlite's BINARY order)."""
    if not prefix or ord(prefix[-1]) >= 0x10FFFF:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _is_locked(error: sqlite3.OperationalError) -> bool:
    message = str(error)
    return "database is locked" in message or "database is busy" in message


class SqliteMetadataStore(MetadataStore):
    """``MetadataStore`` on a local sqlite file; see the module docstring."""

    def __init__(self, path: Path, changelog_retention: int = 10_000) -> None:
        if not path.is_absolute():
            raise ValueError(f"sqlite metadata store path must be absolute, got {path}")
        self.path = path
        self.changelog_retention = changelog_retention
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-metastore")
        self._conn: sqlite3.Connection | None = None
        self._probe: sqlite3.Connection | None = None
        self._revision_seen = -1
        self._revision_written = -1
        """The revision after this store's last committed write, set by the store's thread."""
        self._change_signal = asyncio.Event()
        self._poll_task: asyncio.Task[None] | None = None
        self._closed = False

    @classmethod
    async def open(cls, path: Path, changelog_retention: int = 10_000) -> SqliteMetadataStore:
        ensure_local_filesystem(path)
        store = cls(path, changelog_retention)
        await store._run(store._connect)
        store._probe = sqlite3.connect(path, timeout=0, isolation_level=None)
        store._poll_task = asyncio.get_running_loop().create_task(store._poll_forever())
        log.info("sqlite_metadata_store_opened", path=str(path), retention=changelog_retention)
        return store

    # ---- thread plumbing -------------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        if self._closed:
            raise StoreUnavailableError(f"metadata store {self.path} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, function, *args)

    async def _run_write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """A write transaction, then wake this store's watchers if it made a revision
        (any write may also have swept leases), without waiting for the next poll."""
        try:
            return await self._run(self._write, body)
        finally:
            self._note_revision(self._revision_written)

    def _note_revision(self, revision: int) -> None:
        """Wake the watchers when ``revision`` is one they have not been woken for."""
        if revision > self._revision_seen:
            self._revision_seen = revision
            self._wake_watchers()

    def _connect(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._conn = conn
        self._retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone())
        conn.execute("PRAGMA synchronous = FULL")
        self._write(lambda c: [c.execute(statement) for statement in _SCHEMA], sweep=False)

    def _retry_locked(self, action: Callable[[], T]) -> T:
        backoff = Backoff(LOCKED_RETRY_INITIAL_S, LOCKED_RETRY_MAX_S)
        for attempt in range(LOCKED_RETRIES):
            try:
                return action()
            except sqlite3.OperationalError as error:
                if not _is_locked(error) or attempt == LOCKED_RETRIES - 1:
                    raise StoreUnavailableError(f"sqlite {self.path}: {error}") from error
                log.warning("sqlite_locked_retry", path=str(self.path), attempt=attempt)
                time.sleep(backoff.next_delay())
        raise AssertionError("unreachable")

    def _write(self, body: Callable[[sqlite3.Connection], T], sweep: bool = True) -> T:
        """Run ``body`` in a ``BEGIN IMMEDIATE`` transaction, after sweeping expired
        leases so every decision sees them gone (and forgiving the leases the time this
        write waited for a lock nobody committed under)."""
        conn = self._conn
        assert conn is not None
        requested_ms = wall_clock_ms()
        self._retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            if sweep:
                started_ms = wall_clock_ms()
                if started_ms - requested_ms >= STALL_MIN_MS:
                    self._forgive_stall(conn, _meta(conn, "last_write_started_ms"), started_ms)
                self._sweep_expired_leases(conn, started_ms)
                conn.execute("UPDATE meta SET value = ? WHERE name = 'last_write_started_ms'", (started_ms,))
            result = body(conn)
            revision = _meta(conn, "revision")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        self._revision_written = revision
        return result

    def _read(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in one read snapshot (a deferred transaction)."""
        conn = self._conn
        assert conn is not None
        conn.execute("BEGIN")
        try:
            return body(conn)
        finally:
            conn.execute("COMMIT")

    # ---- revisions, change log, leases (called inside a write transaction) -----

    def _next_revision(self, conn: sqlite3.Connection) -> int:
        row = conn.execute("UPDATE meta SET value = value + 1 WHERE name = 'revision' RETURNING value").fetchone()
        revision = int(row[0])
        if revision % PRUNE_EVERY_REVISIONS == 0:
            self._compact_locked(conn, revision - self.changelog_retention + 1)
        return revision

    @staticmethod
    def _compact_locked(conn: sqlite3.Connection, revision: int) -> None:
        compact_revision = _meta(conn, "compact_revision")
        if revision <= compact_revision:
            return
        conn.execute("DELETE FROM changelog WHERE revision < ?", (revision,))
        conn.execute("UPDATE meta SET value = ? WHERE name = 'compact_revision'", (revision,))

    def _delete_key_locked(self, conn: sqlite3.Connection, key: str) -> int:
        revision = self._next_revision(conn)
        conn.execute("DELETE FROM kv WHERE key = ?", (key,))
        conn.execute(
            "INSERT INTO changelog (revision, type, key, value) VALUES (?, 'delete', ?, x'')",
            (revision, key),
        )
        return revision

    def _put_locked(self, conn: sqlite3.Connection, key: str, value: bytes, lease: int | None) -> int:
        if lease is not None and conn.execute("SELECT 1 FROM leases WHERE id = ?", (lease,)).fetchone() is None:
            raise LeaseNotFoundError(f"lease {lease} does not exist (expired or revoked)")
        revision = self._next_revision(conn)
        conn.execute(
            "INSERT INTO kv (key, value, create_revision, mod_revision, lease_id) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value,"
            " mod_revision = excluded.mod_revision, lease_id = excluded.lease_id",
            (key, value, revision, revision, lease),
        )
        conn.execute(
            "INSERT INTO changelog (revision, type, key, value) VALUES (?, 'put', ?, ?)",
            (revision, key, value),
        )
        return revision

    def _end_lease_locked(self, conn: sqlite3.Connection, lease_id: int) -> int:
        keys = [row[0] for row in conn.execute("SELECT key FROM kv WHERE lease_id = ? ORDER BY key", (lease_id,))]
        for key in keys:
            self._delete_key_locked(conn, key)
        conn.execute("DELETE FROM leases WHERE id = ?", (lease_id,))
        return len(keys)

    @staticmethod
    def _forgive_stall(conn: sqlite3.Connection, previous_started_ms: int, now_ms: int) -> None:
        """Push on every lease alive when the previous write took the lock by the time since: this
        writer waited for the lock through a stall, and no holder could renew during it either."""
        stall_ms = now_ms - previous_started_ms
        extended = conn.execute(
            "UPDATE leases SET expiry_ms = expiry_ms + ? WHERE expiry_ms > ?", (stall_ms, previous_started_ms)
        ).rowcount
        log.warning("lease_expiries_extended_after_stall", stall_ms=stall_ms, leases=extended)

    def _sweep_expired_leases(self, conn: sqlite3.Connection, now_ms: int) -> int:
        expired = [row[0] for row in conn.execute("SELECT id FROM leases WHERE expiry_ms <= ? ORDER BY id", (now_ms,))]
        for lease_id in expired:
            deleted_keys = self._end_lease_locked(conn, lease_id)
            log.info("lease_expired", lease_id=lease_id, deleted_keys=deleted_keys)
        return len(expired)

    # ---- key-value operations --------------------------------------------------

    async def get(self, key: str) -> KeyValue | None:
        row = await self._run(self._get_row, key)
        return None if row is None else _key_value(row)

    def _get_row(self, key: str) -> tuple[Any, ...] | None:
        assert self._conn is not None
        return self._conn.execute(
            "SELECT key, value, mod_revision, create_revision, lease_id FROM kv WHERE key = ?", (key,)
        ).fetchone()

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        rows, revision = await self._run(self._read, lambda conn: self._list_locked(conn, prefix))
        return [_key_value(row) for row in rows], revision

    def _list_locked(self, conn: sqlite3.Connection, prefix: str) -> tuple[builtins.list[Any], int]:
        upper = prefix_upper_bound(prefix)
        sql = "SELECT key, value, mod_revision, create_revision, lease_id FROM kv WHERE key >= ?"
        params: tuple[Any, ...] = (prefix,)
        if upper is not None:
            sql, params = sql + " AND key < ?", (prefix, upper)
        rows = conn.execute(sql + " ORDER BY key", params).fetchall()
        rows = [row for row in rows if row[0].startswith(prefix)]
        return rows, _meta(conn, "revision")

    async def put(self, key: str, value: bytes, lease: int | None = None) -> int:
        return await self._run_write(lambda conn: self._put_locked(conn, key, value, lease))

    async def put_if(self, key: str, value: bytes, expected_revision: int, lease: int | None = None) -> int | None:
        def compare_and_put(conn: sqlite3.Connection) -> int | None:
            if _mod_revision(conn, key) != expected_revision:
                return None
            return self._put_locked(conn, key, value, lease)

        return await self._run_write(compare_and_put)

    async def delete_if(self, key: str, expected_revision: int) -> bool:
        def compare_and_delete(conn: sqlite3.Connection) -> bool:
            if expected_revision <= 0 or _mod_revision(conn, key) != expected_revision:
                return False
            self._delete_key_locked(conn, key)
            return True

        return await self._run_write(compare_and_delete)

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

        def fenced_compare_and_put(conn: sqlite3.Connection) -> int | None:
            # Both reads and the write share one BEGIN IMMEDIATE transaction: the
            # fence cannot move between its comparison and the write.
            if _mod_revision(conn, fence_key) != fence_revision or _mod_revision(conn, key) != expected_revision:
                return None
            return self._put_locked(conn, key, value, lease)

        return await self._run_write(fenced_compare_and_put)

    async def put_all_if(self, items: Sequence[tuple[str, bytes, int]]) -> int | None:
        return await self._put_all_when(items, lambda conn: True)

    async def put_all_fenced(
        self, items: Sequence[tuple[str, bytes, int]], fence_key: str, fence_revision: int
    ) -> int | None:
        require_fence_revision(fence_key, fence_revision)
        return await self._put_all_when(items, lambda conn: _mod_revision(conn, fence_key) == fence_revision)

    async def _put_all_when(
        self, items: Sequence[tuple[str, bytes, int]], guard: Callable[[sqlite3.Connection], bool]
    ) -> int | None:
        """Every item's compare-and-set in one transaction, only if ``guard`` holds too."""
        require_put_batch(items)

        def put_all(conn: sqlite3.Connection) -> int | None:
            if not guard(conn):
                return None
            if any(_mod_revision(conn, key) != expected for key, _, expected in items):
                return None
            return max(self._put_locked(conn, key, value, None) for key, value, _ in items)

        return await self._run_write(put_all)

    async def delete_if_fenced(self, key: str, expected_revision: int, fence_key: str, fence_revision: int) -> bool:
        require_fence_revision(fence_key, fence_revision)

        def fenced_compare_and_delete(conn: sqlite3.Connection) -> bool:
            if _mod_revision(conn, fence_key) != fence_revision:
                return False
            if expected_revision <= 0 or _mod_revision(conn, key) != expected_revision:
                return False
            self._delete_key_locked(conn, key)
            return True

        return await self._run_write(fenced_compare_and_delete)

    async def compact(self, revision: int) -> None:
        await self._run_write(lambda conn: self._compact_locked(conn, revision))

    # ---- leases ----------------------------------------------------------------

    async def grant(self, ttl_ms: int) -> Lease:
        if ttl_ms <= 0:
            raise ValueError(f"lease ttl_ms must be positive, got {ttl_ms}")

        def insert_lease(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "INSERT INTO leases (ttl_ms, expiry_ms) VALUES (?, ?)", (ttl_ms, wall_clock_ms() + ttl_ms)
            )
            return int(cursor.lastrowid or 0)

        lease_id = await self._run_write(insert_lease)
        return Lease(id=lease_id, ttl_ms=ttl_ms)

    async def keep_alive(self, lease_id: int) -> bool:
        def extend(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute("UPDATE leases SET expiry_ms = ? + ttl_ms WHERE id = ?", (wall_clock_ms(), lease_id))
            return cursor.rowcount == 1

        return await self._run_write(extend)

    async def revoke(self, lease_id: int) -> None:
        await self._run_write(lambda conn: self._end_lease_locked(conn, lease_id))

    # ---- watches ---------------------------------------------------------------

    async def watch(self, prefix: str, from_revision: int) -> AsyncIterator[WatchEvent]:
        if from_revision < 1:
            raise ValueError(f"from_revision must be >= 1, got {from_revision}")
        next_revision = from_revision
        while not self._closed:
            signal = self._change_signal
            # The lambda runs (and is dropped) before next_revision moves on.
            events, scanned_through = await self._run(self._read, lambda c: self._changes(c, prefix, next_revision))  # noqa: B023
            for event in events:
                yield event
            next_revision = scanned_through + 1
            if not events:
                await signal.wait()

    def _changes(
        self, conn: sqlite3.Connection, prefix: str, from_revision: int
    ) -> tuple[builtins.list[WatchEvent], int]:
        """Matching changes from ``from_revision`` and the last revision they cover."""
        compact_revision = _meta(conn, "compact_revision")
        current_revision = _meta(conn, "revision")
        if from_revision < compact_revision:
            raise CompactedError(from_revision, compact_revision, current_revision)
        upper = prefix_upper_bound(prefix)
        sql = "SELECT revision, type, key, value FROM changelog WHERE revision >= ? AND key >= ?"
        params: tuple[Any, ...] = (from_revision, prefix)
        if upper is not None:
            sql, params = sql + " AND key < ?", (*params, upper)
        rows = conn.execute(sql + " ORDER BY revision LIMIT ?", (*params, WATCH_BATCH_ROWS)).fetchall()
        events = [
            WatchEvent(type=row[1], key=row[2], value=bytes(row[3]), mod_revision=int(row[0]))
            for row in rows
            if row[2].startswith(prefix)
        ]
        scanned_through = (
            int(rows[-1][0]) if len(rows) == WATCH_BATCH_ROWS else max(current_revision, from_revision - 1)
        )
        return events, scanned_through

    def _wake_watchers(self) -> None:
        signal, self._change_signal = self._change_signal, asyncio.Event()
        signal.set()

    async def _poll_forever(self) -> None:
        """Wake watchers when another process committed; sweep expired leases."""
        while not self._closed:
            await asyncio.sleep(POLL_INTERVAL_MS / 1000)
            try:
                revision, leases_expired = self._probe_once()
                self._note_revision(revision)
                if leases_expired:
                    await self._run_write(lambda _: None)  # every write sweeps expired leases first
            except sqlite3.OperationalError as error:
                if not _is_locked(error):
                    raise
                continue  # another connection holds the file for a moment: the next poll sees it
            except StoreUnavailableError as error:
                log.warning("sqlite_poll_failed", path=str(self.path), error=str(error))
                continue

    def _probe_once(self) -> tuple[int, bool]:
        """(the store's revision, whether a lease has expired); on the event loop."""
        probe = self._probe
        assert probe is not None
        revision = _meta(probe, "revision")
        next_expiry_ms = probe.execute("SELECT MIN(expiry_ms) FROM leases").fetchone()[0]
        return revision, next_expiry_ms is not None and next_expiry_ms <= wall_clock_ms()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake_watchers()
        if self._poll_task is not None:
            self._poll_task.cancel()
            await asyncio.gather(self._poll_task, return_exceptions=True)
        if self._probe is not None:
            self._probe.close()
        loop = asyncio.get_running_loop()
        if self._conn is not None:
            await loop.run_in_executor(self._executor, self._conn.close)
        self._executor.shutdown(wait=False)
        log.info("sqlite_metadata_store_closed", path=str(self.path), pid=os.getpid())


def _meta(conn: sqlite3.Connection, name: str) -> int:
    return int(conn.execute("SELECT value FROM meta WHERE name = ?", (name,)).fetchone()[0])


def _key_value(row: tuple[Any, ...]) -> KeyValue:
    return KeyValue(
        key=row[0], value=bytes(row[1]), mod_revision=int(row[2]), create_revision=int(row[3]), lease=row[4]
    )


def _mod_revision(conn: sqlite3.Connection, key: str) -> int:
    """``key``'s mod revision, 0 when absent (real revisions start at 1)."""
    row = conn.execute("SELECT mod_revision FROM kv WHERE key = ?", (key,)).fetchone()
    return 0 if row is None else int(row[0])
