"""The MetadataStore contract for fenced writes (``put_if_fenced``/``delete_if_fenced``),
run unchanged against the sqlite and the etcd store.

A fenced write must land only while the fence key (``/controller``) still has the
mod revision the writer holds, judged atomically with the key's own CAS. "No effect"
is checked strictly: the key is unchanged AND the store revision did not move.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from broker.cluster.controller_fence import ControllerFence
from broker.cluster.store import MAX_PUT_BATCH, LeaseNotFoundError, MetadataStore, WatchEvent
from broker.errors import NotController
from tests.metastore.conftest import Backend
from tests.metastore.test_contract import close_watch, take, value_of

FENCE = "/controller"


async def store_revision(store: MetadataStore) -> int:
    return (await store.list("/"))[1]


async def claim_fence(store: MetadataStore, holder: bytes = b"broker-1", lease: int | None = None) -> int:
    epoch = await store.put_if(FENCE, holder, 0, lease=lease)
    assert epoch is not None
    return epoch


async def test_fenced_put_and_delete_succeed_while_the_fence_holds(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    created = await store.put_if_fenced("/topics/t", b"v1", 0, FENCE, epoch)
    assert created is not None and created > epoch
    updated = await store.put_if_fenced("/topics/t", b"v2", created, FENCE, epoch)
    assert updated is not None and updated > created
    current = await store.get("/topics/t")
    assert current is not None
    assert (current.value, current.create_revision, current.mod_revision) == (b"v2", created, updated)
    fence = await store.get(FENCE)
    assert fence is not None and fence.mod_revision == epoch, "a fenced write must not touch the fence key"

    assert await store.delete_if_fenced("/topics/t", updated, FENCE, epoch) is True
    assert await store.get("/topics/t") is None


async def test_fenced_put_binds_the_key_to_a_lease(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    lease = await store.grant(60_000)
    written = await store.put_if_fenced("/brokers/1", b"alive", 0, FENCE, epoch, lease=lease.id)
    bound = await store.get("/brokers/1")
    assert bound is not None and (bound.mod_revision, bound.lease) == (written, lease.id)
    await store.revoke(lease.id)
    assert await store.get("/brokers/1") is None
    with pytest.raises(LeaseNotFoundError):
        await store.put_if_fenced("/brokers/1", b"late", 0, FENCE, epoch, lease=lease.id)


async def assert_fenced_writes_have_no_effect(store: MetadataStore, stale_epoch: int) -> None:
    """``/topics/t`` exists; neither a fenced put nor a fenced delete on it (with a
    correct key CAS) nor a fenced create of a new key may change anything."""
    record = await store.get("/topics/t")
    assert record is not None
    before = await store_revision(store)
    assert await store.put_if_fenced("/topics/t", b"stale", record.mod_revision, FENCE, stale_epoch) is None
    assert await store.put_if_fenced("/topics/new", b"stale", 0, FENCE, stale_epoch) is None
    assert await store.delete_if_fenced("/topics/t", record.mod_revision, FENCE, stale_epoch) is False
    assert await store.get("/topics/t") == record
    assert await store.get("/topics/new") is None
    assert await store_revision(store) == before, "a rejected fenced write consumed a revision"


async def test_fenced_writes_fail_once_the_fence_key_is_rewritten(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    await store.put("/topics/t", b"v1")
    assert await store.put_if(FENCE, b"broker-2", epoch) is not None
    await assert_fenced_writes_have_no_effect(store, epoch)


async def test_fenced_writes_fail_once_the_fence_key_is_deleted(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    await store.put("/topics/t", b"v1")
    assert await store.delete_if(FENCE, epoch) is True
    await assert_fenced_writes_have_no_effect(store, epoch)


async def test_fenced_writes_fail_when_the_fence_key_never_existed(store: MetadataStore) -> None:
    record_revision = await store.put("/topics/t", b"v1")
    # The record's own revision is a real, positive revision that no fence carries.
    await assert_fenced_writes_have_no_effect(store, record_revision)


async def test_a_fence_revision_of_zero_is_refused(store: MetadataStore) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        await store.put_if_fenced("/topics/t", b"v", 0, FENCE, 0)
    with pytest.raises(ValueError, match="must be positive"):
        await store.delete_if_fenced("/topics/t", 1, FENCE, 0)
    assert await store.get("/topics/t") is None


async def test_fenced_writes_fail_when_the_key_cas_fails(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    first = await store.put("/topics/t", b"v1")
    second = await store.put("/topics/t", b"v2")
    before = await store_revision(store)

    assert await store.put_if_fenced("/topics/t", b"stale", first, FENCE, epoch) is None
    assert await store.put_if_fenced("/topics/t", b"exists", 0, FENCE, epoch) is None
    assert await store.put_if_fenced("/topics/absent", b"x", second, FENCE, epoch) is None
    assert await store.delete_if_fenced("/topics/t", first, FENCE, epoch) is False
    assert await store.delete_if_fenced("/topics/absent", second, FENCE, epoch) is False
    assert await store.delete_if_fenced("/topics/absent", 0, FENCE, epoch) is False

    current = await store.get("/topics/t")
    assert current is not None and (current.value, current.mod_revision) == (b"v2", second)
    assert await store.get("/topics/absent") is None
    assert await store_revision(store) == before


@dataclass
class RacingController:
    """Writes ``<name>-<n>`` to its records by fenced CAS on fresh reads until
    stopped; counts the writes rejected after the takeover completed."""

    name: str
    store: MetadataStore
    epoch: int
    keys: list[str]
    landed: list[int] = field(default_factory=list)
    rejected_after_takeover: int = 0

    async def run(self, stop: asyncio.Event, taken_over: asyncio.Event) -> None:
        attempt = 0
        while not stop.is_set():
            key = self.keys[attempt % len(self.keys)]
            attempt += 1
            after_takeover = taken_over.is_set()
            current = await self.store.get(key)
            expected = 0 if current is None else current.mod_revision
            value = f"{self.name}-{attempt}".encode()
            revision = await self.store.put_if_fenced(key, value, expected, FENCE, self.epoch)
            if revision is not None:
                self.landed.append(revision)
            elif after_takeover:
                self.rejected_after_takeover += 1
            await asyncio.sleep(0)


async def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    async def poll() -> None:
        while not condition():  # noqa: ASYNC110 - a plain predicate, nothing to set an Event
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(poll(), timeout_s)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def test_after_a_fence_change_only_the_new_controllers_writes_land(backend: Backend) -> None:
    store_old, store_new, observer = await backend.open(), await backend.open(), await backend.open()
    first_revision = await observer.put("/records/start", b"")
    old_lease = await store_old.grant(60_000)
    old = RacingController(
        "old",
        store_old,
        await claim_fence(store_old, b"broker-1", old_lease.id),
        [f"/records/{index}" for index in range(4)],
    )
    stop, taken_over = asyncio.Event(), asyncio.Event()
    old_task = asyncio.create_task(old.run(stop, taken_over))
    await wait_for(lambda: len(old.landed) >= 5, 10.0, "the old controller's first writes")

    # The old controller's session ends (its lease is revoked, deleting /controller)
    # and a new controller claims the fence while the old one keeps writing.
    await observer.revoke(old_lease.id)
    new = RacingController("new", store_new, await claim_fence(store_new, b"broker-2"), ["/records/0", "/records/1"])
    taken_over.set()
    new_task = asyncio.create_task(new.run(stop, taken_over))
    await wait_for(
        lambda: len(new.landed) >= 10 and old.rejected_after_takeover >= 10,
        20.0,
        "new writes landing and old writes being rejected",
    )
    stop.set()
    await asyncio.gather(old_task, new_task)

    final_revision = await store_revision(observer)
    history: list[WatchEvent] = []
    events = observer.watch("/", first_revision)
    while not history or history[-1].mod_revision < final_revision:
        history.extend(await take(events, 1))
    await close_watch(events)

    fence_deleted_at = next(e.mod_revision for e in history if e.key == FENCE and e.type == "delete")
    assert all(revision < fence_deleted_at for revision in old.landed), "a deposed controller's write landed"
    assert all(revision > new.epoch for revision in new.landed)
    writers_after = {e.value.split(b"-")[0] for e in history if e.mod_revision > fence_deleted_at and e.key != FENCE}
    assert writers_after == {b"new"}
    # Records the new controller never touched still hold the old controller's last
    # write: the old one read them fresh, so only the fence stopped it.
    for key in ("/records/2", "/records/3"):
        untouched = await observer.get(key)
        assert untouched is not None and untouched.mod_revision < fence_deleted_at


async def test_controller_fence_tells_a_changed_record_from_a_lost_epoch(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    fence = ControllerFence(store, broker_id=1, controller_epoch=epoch)
    created = await fence.put_if("/topics/t", b"v1", 0)
    assert created is not None
    assert await fence.put_if("/topics/t", b"stale", created - 1) is None
    assert await fence.delete_if("/topics/t", created - 1) is False
    assert not fence.deposed

    assert await store.put_if(FENCE, b"broker-2", epoch) is not None
    with pytest.raises(NotController):
        await fence.put_if("/topics/t", b"deposed", created)
    assert fence.deposed
    with pytest.raises(NotController):
        await fence.delete_if("/topics/t", created)
    current = await store.get("/topics/t")
    assert current is not None and (current.value, current.mod_revision) == (b"v1", created)


async def test_a_fenced_batch_of_creations_writes_every_key_at_once_or_none(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    keys = [f"/partitions/t/{p}" for p in range(MAX_PUT_BATCH)]
    watch = store.watch("/partitions/", await store_revision(store) + 1)
    try:
        last = await store.put_all_fenced([(key, key.encode(), 0) for key in keys], FENCE, epoch)
        assert last is not None and last > epoch
        listed, revision = await store.list("/partitions/t/")
        assert sorted(kv.key for kv in listed) == sorted(keys) and revision == last
        assert {kv.value for kv in listed} == {key.encode() for key in keys}
        seen = await take(watch, MAX_PUT_BATCH)
        assert sorted(event.key for event in seen) == sorted(keys)
    finally:
        await close_watch(watch)

    before = await store_revision(store)
    clash = [("/partitions/u/0", b"new", 0), ("/partitions/t/5", b"again", 0)]
    assert await store.put_all_fenced(clash, FENCE, epoch) is None
    assert await store.get("/partitions/u/0") is None, "one existing key must stop the whole batch"
    assert await store_revision(store) == before
    await store.put(FENCE, b"broker-2")
    assert await store.put_all_fenced([("/partitions/u/0", b"new", 0)], FENCE, epoch) is None
    assert await store.get("/partitions/u/0") is None, "a moved fence must stop the batch"


async def test_a_fenced_batch_of_updates_needs_every_key_at_its_expected_revision(store: MetadataStore) -> None:
    epoch = await claim_fence(store)
    revisions = [await store.put(f"/partitions/v/{p}", b"old") for p in range(3)]
    stale = [(f"/partitions/v/{p}", b"new", revision) for p, revision in enumerate(revisions)]
    stale[1] = ("/partitions/v/1", b"new", revisions[1] - 1)
    assert await store.put_all_fenced(stale, FENCE, epoch) is None
    assert [await value_of(store, f"/partitions/v/{p}") for p in range(3)] == [b"old"] * 3
    fresh = [(f"/partitions/v/{p}", b"new", revision) for p, revision in enumerate(revisions)]
    last = await store.put_all_fenced(fresh, FENCE, epoch)
    assert last is not None and last > max(revisions)
    assert [await value_of(store, f"/partitions/v/{p}") for p in range(3)] == [b"new"] * 3


@pytest.mark.parametrize("size", [0, MAX_PUT_BATCH + 1])
async def test_a_batch_of_no_key_or_of_more_than_etcd_takes_is_refused_before_any_write(
    store: MetadataStore, size: int
) -> None:
    epoch = await claim_fence(store)
    with pytest.raises(ValueError, match="a batch writes"):
        await store.put_all_fenced([(f"/k/{i}", b"v", 0) for i in range(size)], FENCE, epoch)
    with pytest.raises(ValueError, match="names a key twice"):
        await store.put_all_fenced([("/k/1", b"v", 0), ("/k/1", b"w", 0)], FENCE, epoch)
