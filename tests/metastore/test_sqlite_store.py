"""sqlite-only behaviour: automatic change-log pruning, network-filesystem refusal,
several store objects on one file."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from broker.cluster.sqlite_fs import ensure_local_filesystem, filesystem_type
from broker.cluster.sqlite_store import SqliteMetadataStore, prefix_upper_bound
from broker.cluster.store import CompactedError, UnsupportedFilesystemError
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
