"""The MetadataStore contract, run unchanged against the sqlite and the etcd store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import AsyncGenerator, AsyncIterator

import pytest

from broker.cluster.store import (
    CompactedError,
    LeaseNotFoundError,
    MetadataStore,
    WatchEvent,
    keep_lease_alive,
)
from tests.metastore.conftest import Backend


async def take(events: AsyncIterator[WatchEvent], count: int, timeout_s: float = 10.0) -> list[WatchEvent]:
    async def collect() -> list[WatchEvent]:
        return [await anext(events) for _ in range(count)]

    return await asyncio.wait_for(collect(), timeout_s)


async def close_watch(events: AsyncIterator[WatchEvent]) -> None:
    """Close a watch left early. ``MetadataStore.watch`` is declared to return an
    ``AsyncIterator``; every store implements it as an async generator, which has ``aclose``."""
    assert isinstance(events, AsyncGenerator)
    await events.aclose()


def summary(events: list[WatchEvent]) -> list[tuple[str, str, bytes]]:
    return [(event.type, event.key, event.value) for event in events]


async def test_put_get_and_list_track_revisions(store: MetadataStore) -> None:
    first = await store.put("/brokers/1", b"a")
    second = await store.put("/brokers/2", b"b")
    updated = await store.put("/brokers/1", b"a2")
    await store.put("/topics/t", b"other prefix")
    assert 0 < first < second < updated

    broker_1 = await store.get("/brokers/1")
    assert broker_1 is not None
    assert (broker_1.value, broker_1.create_revision, broker_1.mod_revision, broker_1.lease) == (
        b"a2",
        first,
        updated,
        None,
    )
    assert await store.get("/brokers/3") is None

    listed, listed_at = await store.list("/brokers/")
    assert [(kv.key, kv.value) for kv in listed] == [("/brokers/1", b"a2"), ("/brokers/2", b"b")]
    assert listed_at > updated


async def test_put_if_zero_creates_only_if_absent(store: MetadataStore) -> None:
    created = await store.put_if("/controller", b"broker-1", 0)
    assert created is not None
    assert await store.put_if("/controller", b"broker-2", 0) is None
    controller = await store.get("/controller")
    assert controller is not None and controller.value == b"broker-1"
    assert controller.mod_revision == created


async def test_put_if_requires_the_current_mod_revision(store: MetadataStore) -> None:
    first = await store.put("/partitions/t/0", b"epoch-1")
    second = await store.put_if("/partitions/t/0", b"epoch-2", first)
    assert second is not None and second > first
    assert await store.put_if("/partitions/t/0", b"stale-writer", first) is None
    assert await store.put_if("/partitions/t/1", b"absent", first) is None
    current = await store.get("/partitions/t/0")
    assert current is not None and (current.value, current.mod_revision) == (b"epoch-2", second)


async def test_a_batch_of_compare_and_sets_writes_every_key_or_none(store: MetadataStore) -> None:
    revisions = [await store.put(f"/partitions/t/{p}", b"old") for p in range(3)]
    batch = [(f"/partitions/t/{p}", b"new", revision) for p, revision in enumerate(revisions)]
    batch.append(("/partitions/t/3", b"created", 0))
    stale = [*batch[:1], ("/partitions/t/1", b"new", revisions[1] - 1), *batch[2:]]
    assert await store.put_all_if(stale) is None
    assert [await value_of(store, f"/partitions/t/{p}") for p in range(4)] == [b"old", b"old", b"old", None]
    last = await store.put_all_if(batch)
    assert last is not None and last > max(revisions)
    assert [await value_of(store, f"/partitions/t/{p}") for p in range(4)] == [b"new", b"new", b"new", b"created"]
    assert await store.put_all_if([("/partitions/t/4", b"x", 0), ("/partitions/t/3", b"again", 0)]) is None
    assert await store.get("/partitions/t/4") is None, "one existing key must stop the whole batch"
    with pytest.raises(ValueError, match="names a key twice"):
        await store.put_all_if([("/k/1", b"v", 0), ("/k/1", b"w", 0)])
    with pytest.raises(ValueError, match="a batch writes"):
        await store.put_all_if([])


async def value_of(store: MetadataStore, key: str) -> bytes | None:
    """The key's value, None when absent."""
    kv = await store.get(key)
    return None if kv is None else kv.value


async def test_delete_if_requires_the_current_mod_revision(store: MetadataStore) -> None:
    first = await store.put("/brokers/7", b"x")
    second = await store.put("/brokers/7", b"y")
    assert await store.delete_if("/brokers/7", first) is False
    assert await store.get("/brokers/7") is not None
    assert await store.delete_if("/brokers/7", second) is True
    assert await store.get("/brokers/7") is None
    assert await store.delete_if("/brokers/7", second) is False


async def test_concurrent_cas_tasks_never_lose_an_increment(store: MetadataStore) -> None:
    from tests.metastore.workers import increment_until

    target = 150
    results = await asyncio.gather(*(increment_until(store, "/counter", target) for _ in range(20)))
    wins = [expected for result in results for expected in result["wins"]]
    counter = await store.get("/counter")
    assert counter is not None and int(counter.value) == target
    assert len(wins) == target
    assert len(set(wins)) == len(wins), "two writers won a CAS on the same revision"
    assert sum(result["attempts"] for result in results) > target, "no contention happened"


async def test_concurrent_cas_processes_never_lose_an_increment(backend: Backend, spawn_worker) -> None:
    target = 200
    workers = [spawn_worker("cas", backend.url, "/counter", str(target)) for _ in range(4)]
    for worker in workers:
        assert worker.stdout.readline().strip() == "ready"
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    results = [json.loads(worker.stdout.readline()) for worker in workers]
    assert all(worker.wait(timeout=30) == 0 for worker in workers)

    store = await backend.open()
    counter = await store.get("/counter")
    wins = [expected for result in results for expected in result["wins"]]
    assert counter is not None and int(counter.value) == target == len(wins)
    assert len(set(wins)) == len(wins), "two processes won a CAS on the same revision"
    assert sum(result["attempts"] for result in results) > target, "no contention happened"


async def test_lease_expiry_deletes_keys_and_emits_delete_events(store: MetadataStore) -> None:
    lease = await store.grant(500)
    assert lease.ttl_ms >= 500
    first = await store.put("/brokers/1", b"alive", lease=lease.id)
    await store.put("/brokers/2", b"alive", lease=lease.id)
    bound = await store.get("/brokers/1")
    assert bound is not None and bound.lease == lease.id

    events = store.watch("/brokers/", first)
    seen = await take(events, 4, timeout_s=lease.ttl_ms / 1000 + 3)
    await close_watch(events)

    assert summary(seen[:2]) == [("put", "/brokers/1", b"alive"), ("put", "/brokers/2", b"alive")]
    assert sorted(summary(seen[2:])) == [("delete", "/brokers/1", b""), ("delete", "/brokers/2", b"")]
    assert await store.get("/brokers/1") is None
    assert await store.keep_alive(lease.id) is False
    with pytest.raises(LeaseNotFoundError):
        await store.put("/brokers/3", b"late", lease=lease.id)


async def test_revoke_deletes_keys_at_once(store: MetadataStore) -> None:
    lease = await store.grant(60_000)
    await store.put("/controller", b"broker-1", lease=lease.id)
    await store.put("/unleased", b"stays")
    await store.revoke(lease.id)
    assert await store.get("/controller") is None
    assert await store.get("/unleased") is not None
    assert await store.put_if("/controller", b"broker-2", 0) is not None
    await store.revoke(lease.id)


async def test_keep_alive_holds_a_key_past_its_ttl(backend: Backend, store: MetadataStore) -> None:
    """Renewed every third of its ttl for two ttls, the key stays; renewals stopped, it expires.

    Whether the renewals came in time is measured, not assumed: a loaded machine can hold
    the keeper back past the ttl, and then the lease rightly expires. So the key must be
    there when every renewal is known to have taken effect within a ttl of the one before
    (each counted from the start of the previous call to the end of its own, an upper
    bound). Otherwise the lease may rightly have expired, and what must hold is that a lease
    a renewal found lost took its key with it.
    """
    renewals: list[tuple[float, float, bool]] = []
    """(monotonic start, end, answer) of every keep-alive call."""
    keep_alive = store.keep_alive

    async def timed_keep_alive(lease_id: int) -> bool:
        started = time.monotonic()
        alive = await keep_alive(lease_id)
        renewals.append((started, time.monotonic(), alive))
        return alive

    store.keep_alive = timed_keep_alive  # type: ignore[method-assign]
    granted_from = time.monotonic()
    lease = await store.grant(backend.short_ttl_ms)
    await store.put("/brokers/1", b"alive", lease=lease.id)
    keeper = asyncio.create_task(keep_lease_alive(store, lease))
    await asyncio.sleep(2 * lease.ttl_ms / 1000)
    held = await store.get("/brokers/1") is not None
    read_at = time.monotonic()
    ttl_s = lease.ttl_ms / 1000
    starts = [granted_from, *(started for started, _, _ in renewals)]
    ends = [*(ended for _, ended, _ in renewals), read_at]
    latest_gap_s = max(end - start for start, end in zip(starts, ends))
    answers = [alive for _, _, alive in renewals]
    if not all(answers):
        assert not held, "the lease was lost, yet its key stayed"
    if latest_gap_s < ttl_s:
        assert all(answers), "a renewal in time found the lease gone"
        assert held, f"key expired although renewed within {latest_gap_s * 1000:.0f} ms each time"
        assert not keeper.done()
    keeper.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await keeper
    deadline = time.monotonic() + (lease.ttl_ms + backend.expiry_margin_ms) / 1000
    while await store.get("/brokers/1") is not None:
        assert time.monotonic() < deadline, f"key outlived its {lease.ttl_ms} ms lease once renewals stopped"
        await asyncio.sleep(0.02)


async def test_lease_of_a_sigkilled_holder_expires(backend: Backend, store: MetadataStore, spawn_worker) -> None:
    holder = spawn_worker("hold-lease", backend.url, "/brokers/9", str(backend.short_ttl_ms))
    granted = json.loads(await asyncio.to_thread(holder.stdout.readline))
    ttl_ms = granted["ttl_ms"]
    await asyncio.sleep(1.5 * ttl_ms / 1000)
    assert await store.get("/brokers/9") is not None, "the holder's keep-alives did not hold the key"

    events = store.watch("/brokers/", granted["revision"] + 1)
    holder.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    [deleted] = await take(events, 1, timeout_s=ttl_ms / 1000 + 5)
    detected_after_ms = (time.monotonic() - killed_at) * 1000
    await close_watch(events)

    assert (deleted.type, deleted.key) == ("delete", "/brokers/9")
    assert detected_after_ms <= ttl_ms + backend.expiry_margin_ms, detected_after_ms
    assert await store.get("/brokers/9") is None


async def test_watch_replays_history_in_order_then_follows_live_changes(store: MetadataStore) -> None:
    start = await store.put("/isr/t/0", b"[1,2,3]")
    await store.put("/isr/t/1", b"[2,3]")
    await store.put("/elsewhere", b"not watched")
    second = await store.get("/isr/t/0")
    assert second is not None
    await store.put_if("/isr/t/0", b"[1,2]", second.mod_revision)

    events = store.watch("/isr/", start)
    replayed = await take(events, 3)
    live_writes = asyncio.create_task(_write_then_delete(store))
    live = await take(events, 2)
    await live_writes
    await close_watch(events)

    assert summary(replayed + live) == [
        ("put", "/isr/t/0", b"[1,2,3]"),
        ("put", "/isr/t/1", b"[2,3]"),
        ("put", "/isr/t/0", b"[1,2]"),
        ("put", "/isr/t/2", b"[3]"),
        ("delete", "/isr/t/1", b""),
    ]
    revisions = [event.mod_revision for event in replayed + live]
    assert revisions == sorted(set(revisions)) and revisions[0] == start


async def _write_then_delete(store: MetadataStore) -> None:
    await asyncio.sleep(0.05)
    await store.put("/isr/t/2", b"[3]")
    current = await store.get("/isr/t/1")
    assert current is not None
    assert await store.delete_if("/isr/t/1", current.mod_revision)


async def test_watch_resumes_from_last_seen_revision_after_restart(backend: Backend) -> None:
    writer = await backend.open()
    watcher = await backend.open()
    start = await writer.put("/topics/t0", b"0")
    for index in range(1, 5):
        await writer.put(f"/topics/t{index}", str(index).encode())
    events = watcher.watch("/topics/", start)
    before = await take(events, 5)
    await close_watch(events)
    await watcher.close()

    backend.restart_server()
    for index in range(5, 10):
        await writer.put(f"/topics/t{index}", str(index).encode())

    reopened = await backend.open()
    resumed_events = reopened.watch("/topics/", before[-1].mod_revision + 1)
    after = await take(resumed_events, 5)
    await close_watch(resumed_events)
    assert [event.value for event in before + after] == [str(index).encode() for index in range(10)]


async def test_compacted_revision_raises_compacted_error(store: MetadataStore) -> None:
    first = await store.put("/k", b"1")
    for value in range(2, 6):
        last = await store.put("/k", str(value).encode())
    await store.compact(last)
    events = store.watch("/", first)
    with pytest.raises(CompactedError) as raised:
        await take(events, 1)
    assert raised.value.current_revision >= last
    assert raised.value.requested_revision == first

    listed, listed_at = await store.list("/")
    assert [kv.value for kv in listed] == [b"5"]
    tail = store.watch("/", listed_at + 1)
    writer = asyncio.create_task(store.put("/k", b"6"))
    [after_relist] = await take(tail, 1)
    await writer
    await close_watch(tail)
    assert after_relist.value == b"6"
