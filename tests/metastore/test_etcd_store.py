"""etcd-only behaviour: a live watch survives a member crash; endpoint failover; a failed call told from an answer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aetcd
import grpc
import pytest

from broker.cluster.etcd_store import EtcdMetadataStore, is_unavailable, key_range
from broker.cluster.etcd_watch import RangeWatch
from broker.cluster.store import StoreUnavailableError, keep_lease_alive
from broker.cluster.store_url import open_store
from tests.chaos.proxy import CuttableProxy
from tests.metastore.test_contract import close_watch, summary, take
from tests.support.brokers import free_port
from tests.support.etcd import EtcdServer


async def test_live_watch_survives_an_etcd_crash_without_losing_or_repeating_events(tmp_path: Path) -> None:
    with EtcdServer(tmp_path / "etcd") as server:
        store = await open_store(server.url)
        try:
            first = await store.put("/leaders/t/0", b"1")
            events = store.watch("/leaders/", first)
            await store.put("/leaders/t/1", b"2")
            before = await take(events, 2)

            server.restart()
            await store.put("/leaders/t/0", b"3")
            await store.put("/leaders/t/1", b"4")
            after = await take(events, 2)
            await close_watch(events)
        finally:
            await store.close()
    assert [event.value for event in before + after] == [b"1", b"2", b"3", b"4"]
    revisions = [event.mod_revision for event in before + after]
    assert revisions == sorted(set(revisions))


async def test_unreachable_first_endpoint_fails_over_to_the_next(tmp_path: Path) -> None:
    with EtcdServer(tmp_path / "etcd") as server:
        dead_endpoint = ("127.0.0.1", free_port())
        store = EtcdMetadataStore([dead_endpoint, ("127.0.0.1", server.client_port)], first_endpoint=0)
        try:
            revision = await store.put("/brokers/1", b"up")
            kv = await store.get("/brokers/1")
        finally:
            await store.close()
    assert kv is not None and kv.mod_revision == revision


async def test_granted_ttl_is_rounded_up_to_whole_seconds(tmp_path: Path) -> None:
    with EtcdServer(tmp_path / "etcd") as server:
        store = await open_store(server.url)
        try:
            lease = await store.grant(1500)
            assert lease.ttl_ms == 2000
            await store.put("/a", b"x", lease=lease.id)
            await asyncio.sleep(1.6)
            assert await store.get("/a") is not None, "key expired before the granted ttl"
        finally:
            await store.close()


async def test_empty_prefix_lists_and_watches_every_key(tmp_path: Path) -> None:
    with EtcdServer(tmp_path / "etcd") as server:
        store = await open_store(server.url)
        try:
            first = await store.put("/a", b"1")
            await store.put("zz", b"2")
            listed, _ = await store.list("")
            events = store.watch("", first)
            seen = await take(events, 2)
            await close_watch(events)
        finally:
            await store.close()
    assert [kv.key for kv in listed] == ["/a", "zz"]
    assert summary(seen) == [("put", "/a", b"1"), ("put", "zz", b"2")]


@pytest.mark.parametrize(
    ("error", "unavailable"),
    [
        (aetcd.ClientError("context deadline exceeded"), True),
        (aetcd.ClientError("etcdserver: request timed out"), True),
        (aetcd.ClientError("etcdserver: leader changed"), True),
        (aetcd.ConnectionFailedError("failed to connect to all addresses"), True),
        (aetcd.ClientError("etcdserver: requested lease not found"), False),
        (aetcd.PreconditionFailedError("etcdserver: mvcc: required revision has been compacted"), False),
    ],
)
def test_a_failed_call_is_told_from_etcds_answer(error: Exception, unavailable: bool) -> None:
    assert is_unavailable(error) is unavailable


async def test_a_call_etcd_gave_up_on_is_store_unavailable_so_a_keep_alive_is_tried_again(tmp_path: Path) -> None:
    """Regression: "context deadline exceeded" came out of the keep-alive as a plain ClientError, which
    ended the broker's keep-alive task: cut off from etcd, a broker never registered again."""
    with EtcdServer(tmp_path / "etcd") as server:
        store = await open_store(server.url)
        assert isinstance(store, EtcdMetadataStore)
        calls = 0

        async def gave_up(client: aetcd.Client) -> None:
            nonlocal calls
            calls += 1
            raise aetcd.ClientError("context deadline exceeded")

        async def refused(client: aetcd.Client) -> None:
            raise aetcd.ClientError("etcdserver: requested lease not found")

        try:
            with pytest.raises(StoreUnavailableError, match="context deadline exceeded"):
                await store._call(gave_up, retriable=True)
            assert calls == 2, "a retriable call is tried on every endpoint and once more"
            with pytest.raises(aetcd.ClientError, match="lease not found"):
                await store._call(refused, retriable=True)
            lease = await store.grant(2000)
            assert await store.keep_alive(lease.id), "the client still works after the failed calls"
        finally:
            await store.close()


async def test_a_lease_kept_alive_outlives_its_first_endpoint_going_silent(tmp_path: Path) -> None:
    """Issue 30: a member cut off from the network answers nothing. A keep-alive sent to it used
    to wait out the 5 s request timeout, longer than a broker's 6 s session allows after the
    renewal before it, so every broker talking to that member lost its lease. An attempt now
    gets a sixth of the ttl before the next endpoint is tried."""
    with EtcdServer(tmp_path / "etcd") as server:
        silent = await CuttableProxy(server.client_port).start()
        store = EtcdMetadataStore([("127.0.0.1", silent.port), ("127.0.0.1", server.client_port)], first_endpoint=0)
        keeper: asyncio.Task[None] | None = None
        try:
            lease = await store.grant(2000)
            await store.put("/brokers/1", b"alive", lease=lease.id)
            keeper = asyncio.create_task(keep_lease_alive(store, lease))
            silent.block()
            await asyncio.sleep(2 * lease.ttl_ms / 1000)
            assert await store.get("/brokers/1") is not None, "the lease expired behind the silent member"
            assert not keeper.done()
        finally:
            if keeper is not None:
                keeper.cancel()
                await asyncio.gather(keeper, return_exceptions=True)
            await store.close()
            await silent.close()


async def test_a_call_whose_connection_another_call_dropped_is_tried_on_the_next_endpoint(tmp_path: Path) -> None:
    """A keep-alive unanswered by a silent member drops the connection, and gRPC cancels every
    call still in flight on it: a read waiting there must move to the next endpoint, not end its
    task as if cancelled (a broker stopped while cut off died of it, with a traceback)."""
    with EtcdServer(tmp_path / "etcd") as server:
        silent = await CuttableProxy(server.client_port).start()
        store = EtcdMetadataStore([("127.0.0.1", silent.port), ("127.0.0.1", server.client_port)], first_endpoint=0)
        try:
            lease = await store.grant(2000)
            await store.put("/brokers/1", b"alive")
            silent.block()
            reading = asyncio.create_task(store.get("/brokers/1"))
            assert await store.keep_alive(lease.id), "renewed on the next endpoint"
            read = await reading
            assert read is not None and read.value == b"alive"
        finally:
            await store.close()
            await silent.close()


async def test_a_watch_created_on_a_silent_connection_moves_to_the_next_endpoint(tmp_path: Path) -> None:
    """A host-tier failure: aetcd waits up to the request timeout for a member to confirm each
    new watch, one at a time, and a connection that has gone silent still looks ready. Retried
    on that same connection, a broker's watches came back 5 s apart, its view stale meanwhile;
    a watch that fails now drops the connection, and its retry goes to the next endpoint."""
    with EtcdServer(tmp_path / "etcd") as server:
        silent = await CuttableProxy(server.client_port).start()
        store = EtcdMetadataStore(
            [("127.0.0.1", silent.port), ("127.0.0.1", server.client_port)], request_timeout_s=1.0, first_endpoint=0
        )
        writer = await open_store(server.url)
        try:
            start = await store.put("/controller", b"1")
            silent.block()
            events = store.watch("/controller", start + 1)
            await writer.put("/controller", b"2")
            [event] = await take(events, 1)
            await close_watch(events)
        finally:
            await writer.close()
            await store.close()
            await silent.close()
    assert event.value == b"2"


async def test_a_watch_confirmed_after_its_create_timed_out_never_streams_into_the_next_watch(tmp_path: Path) -> None:
    """aetcd carried a client's watches on one stream and paired each confirmation with whichever
    create was pending: a create that timed out behind a silent member, confirmed once the link
    returned, gave the next watch (``/brokers/``) the events of ``/controller``, and a broker's
    view of live brokers moved past a re-registration it never saw. Each watch has its own stream."""
    with EtcdServer(tmp_path / "etcd") as server:
        silent = await CuttableProxy(server.client_port).start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{silent.port}")
        writer = await open_store(server.url)
        late = RangeWatch(channel, *key_range("/controller"), 1)
        mine = RangeWatch(channel, *key_range("/brokers/"), 1)
        try:
            await channel.channel_ready()
            silent.block()
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.5):
                    await late.created()
            confirming = asyncio.create_task(mine.created())
            await asyncio.sleep(0.1)
            silent.heal()
            await confirming
            await writer.put("/controller", b"1")
            revision = await writer.put("/brokers/2", b"up")
            first = await anext(aiter(mine.events()))
        finally:
            late.cancel()
            mine.cancel()
            await channel.close()
            await writer.close()
            await silent.close()
    assert (first.kv.key, first.kv.mod_revision) == (b"/brokers/2", revision)
