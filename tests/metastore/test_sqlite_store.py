"""sqlite-only behaviour: automatic change-log pruning, network-filesystem refusal,
several store objects on one file."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from broker.cluster.sqlite_fs import ensure_local_filesystem, filesystem_type
from broker.cluster.sqlite_store import SqliteMetadataStore, prefix_upper_bound
from broker.cluster.store import CompactedError, UnsupportedFilesystemError, keep_lease_alive
from broker.cluster.store_url import open_store
from tests.metastore.test_contract import close_watch, take

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
server:/export /mnt/shared nfs4 rw,vers=4.2 0 0
//nas/share /mnt/nas\\040box cifs rw 0 0
user@host:/data /home/u/remote fuse.sshfs rw 0 0
tmpfs /mnt/shared/local tmpfs rw 0 0
"""


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/var/lib/highwater/meta.db", "ext4"),
        ("/mnt/shared/meta.db", "nfs4"),
        ("/mnt/shared/local/meta.db", "tmpfs"),
        ("/mnt/nas box/meta.db", "cifs"),
        ("/mnt/shared2/meta.db", "ext4"),
        ("/home/u/remote/x/meta.db", "fuse.sshfs"),
    ],
)
def test_filesystem_type_uses_the_longest_matching_mount_point(path: str, expected: str) -> None:
    assert filesystem_type(Path(path), MOUNTS) == expected


def test_a_network_filesystem_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    mounts_file = tmp_path / "mounts"
    mounts_file.write_text(f"server:/export {tmp_path} nfs rw 0 0\n")
    with pytest.raises(UnsupportedFilesystemError, match=r"nfs filesystem.*one host"):
        ensure_local_filesystem(tmp_path / "meta.db", mounts_file)
    ensure_local_filesystem(tmp_path / "meta.db")


def test_prefix_upper_bound_bounds_exactly_the_prefixed_keys() -> None:
    assert prefix_upper_bound("/brokers/") == "/brokers0"
    assert prefix_upper_bound("") is None


async def test_change_log_keeps_only_the_retained_revisions(tmp_path: Path) -> None:
    store = await open_store(f"sqlite://{tmp_path / 'meta.db'}?changelog_retention=100")
    try:
        first = await store.put("/k", b"0")
        for value in range(1, 300):
            last = await store.put("/k", str(value).encode())
        with pytest.raises(CompactedError) as raised:
            await take(store.watch("/", first), 1)
        assert raised.value.current_revision == last
        recent = store.watch("/", last - 50)
        assert (await take(recent, 1))[0].mod_revision == last - 50
        await close_watch(recent)
    finally:
        await store.close()


async def test_a_second_store_object_sees_writes_through_data_version(tmp_path: Path) -> None:
    writer = await SqliteMetadataStore.open(tmp_path / "meta.db")
    watcher = await SqliteMetadataStore.open(tmp_path / "meta.db")
    try:
        _, listed_at = await watcher.list("/")
        events = watcher.watch("/", listed_at + 1)
        pending = asyncio.create_task(take(events, 1, timeout_s=2.0))
        await asyncio.sleep(0.1)  # the watcher has replayed nothing and now waits for a wake-up
        written_at = time.monotonic()
        revision = await writer.put("/brokers/1", b"up")
        [event] = await pending
        woken_after_s = time.monotonic() - written_at
        await close_watch(events)
    finally:
        await writer.close()
        await watcher.close()
    assert (event.key, event.mod_revision) == ("/brokers/1", revision)
    assert woken_after_s < 0.5, "the watcher was not woken by the other connection's commit"


async def test_a_closed_store_ends_its_watches(tmp_path: Path) -> None:
    store = await SqliteMetadataStore.open(tmp_path / "meta.db")
    events = store.watch("/", 1)
    await store.close()
    assert [event async for event in events] == []


async def test_a_relative_path_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="absolute"):
        await open_store("sqlite://relative/meta.db")


def _hold_the_write_lock(path: Path, held: threading.Event, seconds: float) -> None:
    """Another process's slow write transaction (a commit whose fsync stalls), as a raw connection."""
    conn = sqlite3.connect(path, timeout=5, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        held.set()
        time.sleep(seconds)
        conn.execute("COMMIT")
    finally:
        conn.close()


async def test_a_lease_survives_a_store_that_nobody_could_write_for_longer_than_its_ttl(tmp_path: Path) -> None:
    """Regression: a write lock held for 2 s (one slow commit on a loaded machine) blocked every
    broker's keep-alive; the first write afterwards swept every lease as expired at once, and the
    live brokers re-registered with new epochs and were dropped from every ISR. The time a
    keep-alive waited while nobody committed is not counted against any lease; a lease nobody
    renews still expires a ttl after its last renewal once the store is writable again."""
    path = tmp_path / "meta.db"
    store = await SqliteMetadataStore.open(path)
    other = await SqliteMetadataStore.open(path)
    try:
        kept = await store.grant(1000)
        abandoned = await other.grant(1000)
        await store.put("/brokers/1", b"alive", lease=kept.id)
        await other.put("/brokers/2", b"gone", lease=abandoned.id)
        renewing = asyncio.create_task(keep_lease_alive(store, kept, 200))
        held = threading.Event()
        holder = asyncio.create_task(asyncio.to_thread(_hold_the_write_lock, path, held, 2.0))
        await asyncio.to_thread(held.wait)
        await holder
        abandoned_at = time.monotonic()
        while await store.get("/brokers/2") is not None:
            assert time.monotonic() - abandoned_at < 5, "the abandoned lease never expired after the stall"
            await asyncio.sleep(0.05)
        assert not renewing.done(), "the live holder lost its lease to the stall"
        assert (await store.get("/brokers/1")) is not None
        renewing.cancel()
    finally:
        await other.close()
        await store.close()


async def test_a_quiet_store_forgives_nothing_a_dead_holders_lease_expires_on_time(tmp_path: Path) -> None:
    """Only a wait for the lock counts as a stall: a store nobody wrote for a while (every holder
    dead) does not keep their leases alive when a writer comes back."""
    store = await SqliteMetadataStore.open(tmp_path / "meta.db")
    try:
        lease = await store.grant(300)
        await store.put("/brokers/1", b"dead", lease=lease.id)
        await asyncio.sleep(0.6)
        await store.put("/other", b"x")
        assert await store.get("/brokers/1") is None
        assert not await store.keep_alive(lease.id)
    finally:
        await store.close()
