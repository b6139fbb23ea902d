"""A controller places replicas over the registrations the store holds, not only those its watch has delivered.

Pins a host-tier failure: every broker listed all three, yet a topic created 30 ms after
the third registration was refused ("replication factor 3 is larger than the 1 live
broker"): the controller's watch of ``/brokers/`` had not delivered the other two. Here
the controller's store holds that watch back until someone lists ``/brokers/`` again, so
the create succeeds only if the controller reads the registrations before it places.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from broker.cluster.controller import Controller
from broker.cluster.membership import BrokerMembership
from broker.cluster.prefix_view import PrefixView
from broker.cluster.records import BROKERS_PREFIX, BrokerRegistration, broker_key
from broker.cluster.sqlite_store import SqliteMetadataStore
from broker.cluster.store import MetadataStore, WatchEvent
from broker.cluster.store_url import open_store
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import HEARTBEAT_INTERVAL_MS, MANUAL_SETTINGS, SESSION_TIMEOUT_MS
from tests.support.waiting import wait_until_async


class HeldWatchStore(SqliteMetadataStore):
    """The sqlite store whose watches of ``/brokers/`` deliver nothing until ``released`` is set;
    with ``release_on_list``, the next listing of ``/brokers/`` sets it (the watch trails a read by a hop)."""

    def __init__(self, path: Path, changelog_retention: int = 10_000) -> None:
        super().__init__(path, changelog_retention)
        self.released = asyncio.Event()
        self.release_on_list = False

    async def list(self, prefix: str) -> tuple[list, int]:
        listed = await super().list(prefix)
        if prefix == BROKERS_PREFIX and self.release_on_list:
            self.released.set()
        return listed

    async def watch(self, prefix: str, from_revision: int) -> AsyncIterator[WatchEvent]:
        if prefix == BROKERS_PREFIX:
            await self.released.wait()
        async for event in super().watch(prefix, from_revision):
            yield event


async def _held(tmp_path: Path) -> HeldWatchStore:
    store = await HeldWatchStore.open(tmp_path / "metadata.db")
    assert isinstance(store, HeldWatchStore)
    return store


async def _register(store: MetadataStore, broker_id: int) -> BrokerMembership:
    registration = BrokerRegistration(broker_id=broker_id, url=f"http://127.0.0.1:{9000 + broker_id}")
    membership = BrokerMembership(store, registration, SESSION_TIMEOUT_MS, HEARTBEAT_INTERVAL_MS)
    await membership.register()
    return membership


async def test_a_view_catches_up_only_once_its_watch_delivers_what_the_store_holds(tmp_path: Path) -> None:
    store = await _held(tmp_path)
    writer = await open_store(f"sqlite://{tmp_path / 'metadata.db'}")
    view = PrefixView(store, BROKERS_PREFIX)
    await view.start()
    try:
        await writer.put(broker_key(2), b"{}")
        assert not await view.catch_up(0.2), "the watch is held: the view cannot hold broker 2 yet"
        assert broker_key(2) not in view.snapshot()
        store.released.set()
        assert await view.catch_up(5.0)
        assert broker_key(2) in view.snapshot()
    finally:
        await view.close()
        await writer.close()
        await store.close()


async def test_a_view_that_holds_what_the_store_holds_catches_up_without_its_watch(tmp_path: Path) -> None:
    store = await _held(tmp_path)
    await store.put(broker_key(1), b"{}")
    view = PrefixView(store, BROKERS_PREFIX)
    await view.start()
    try:
        assert await view.catch_up(5.0), "the listing at start holds broker 1; the held watch adds nothing to wait for"
    finally:
        await view.close()
        await store.close()


async def test_a_topic_created_before_the_controller_heard_of_the_brokers_is_placed_on_all_of_them(
    tmp_path: Path,
) -> None:
    store = await _held(tmp_path)
    first = await _register(store, 1)
    controller = Controller(store, first, MANUAL_SETTINGS)
    await controller.start()
    others = [await open_store(f"sqlite://{tmp_path / 'metadata.db'}") for _ in (2, 3)]
    memberships: list[BrokerMembership] = []
    try:

        async def leads() -> bool:
            return controller.is_active

        # The term lists /brokers/ once before it is ready: brokers 2 and 3 register after that,
        # so only the (held) watch could tell the controller of them. Registered before, they
        # raced that listing, and the listing sometimes held them already.
        await wait_until_async(leads, "broker 1 to lead", 5.0)
        memberships = [await _register(other, broker_id) for other, broker_id in zip(others, (2, 3), strict=True)]
        assert controller.active_term().live_broker_ids() == {1}, "the held watch has delivered no other broker"
        store.release_on_list = True
        records = await controller.create_topic(NewTopic(name="spread", partitions_count=3, replication_factor=3))
        assert [sorted(record.replicas) for record in records] == [[1, 2, 3]] * 3
        assert [sorted(record.isr) for record in records] == [[1, 2, 3]] * 3
    finally:
        await controller.close()
        for membership in [first, *memberships]:
            await membership.close()
        for other in others:
            await other.close()
        await store.close()
