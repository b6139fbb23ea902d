"""Broker registration: duplicate ids refused, takeover after a killed incarnation,
re-registration after a lost lease, and the live broker view."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from broker.cluster.etcd_store import EtcdMetadataStore
from broker.cluster.membership import BrokerMembership, DuplicateBrokerId
from broker.cluster.records import BrokerRegistration, broker_key
from broker.cluster.store import Lease
from broker.cluster.store_url import open_store
from tests.chaos.proxy import CuttableProxy
from tests.cluster.harness import (
    HEARTBEAT_INTERVAL_MS,
    SESSION_TIMEOUT_MS,
    TAKEOVER_MARGIN_MS,
    InProcessCluster,
)
from tests.support.etcd import EtcdServer
from tests.support.waiting import wait_until_async


async def test_second_broker_with_the_same_id_is_refused(cluster: InProcessCluster) -> None:
    original = await cluster.observer.get(broker_key(2))
    store = await open_store(cluster.url)
    impostor = BrokerMembership(
        store,
        BrokerRegistration(broker_id=2, url="http://127.0.0.1:9999"),
        SESSION_TIMEOUT_MS,
        HEARTBEAT_INTERVAL_MS,
        takeover_margin_ms=TAKEOVER_MARGIN_MS,
    )
    started = time.monotonic()
    try:
        with pytest.raises(
            DuplicateBrokerId,
            match=r"broker id 2 is already registered by a live broker at http://127\.0\.0\.1:9002; "
            r"each broker needs its own --node-id",
        ):
            await impostor.register()
    finally:
        await store.close()
    waited_ms = (time.monotonic() - started) * 1000
    assert waited_ms >= SESSION_TIMEOUT_MS + TAKEOVER_MARGIN_MS - 50
    assert await cluster.observer.get(broker_key(2)) == original


async def test_restart_after_kill_takes_over_once_the_old_lease_expires(cluster: InProcessCluster) -> None:
    old_epoch = cluster.brokers[2].membership.broker_epoch
    await cluster.kill(2)
    started = time.monotonic()
    restarted = await cluster.start_broker(2)
    waited_ms = (time.monotonic() - started) * 1000
    assert SESSION_TIMEOUT_MS - HEARTBEAT_INTERVAL_MS - 100 <= waited_ms <= SESSION_TIMEOUT_MS + TAKEOVER_MARGIN_MS
    assert restarted.membership.broker_epoch > old_epoch
    stored = await cluster.observer.get(broker_key(2))
    assert stored is not None and stored.mod_revision == restarted.membership.broker_epoch


async def test_a_broker_whose_lease_was_lost_registers_again(cluster: InProcessCluster) -> None:
    membership = cluster.brokers[3].membership
    old_lease, old_epoch = membership.lease, membership.broker_epoch
    assert old_lease is not None
    await cluster.observer.revoke(old_lease.id)
    await _registered_again(cluster, membership, old_lease, old_epoch)


async def _registered_again(
    cluster: InProcessCluster, membership: BrokerMembership, old: Lease, old_epoch: int
) -> None:
    """Until ``membership`` holds a new lease; then its registration is stored under it, at a later epoch."""

    async def re_registered() -> bool:
        return membership.lease is not None and membership.lease.id != old.id

    await wait_until_async(re_registered, "re-registration with a new lease", 2.0)
    assert membership.broker_epoch > old_epoch
    stored = await cluster.observer.get(broker_key(membership.broker_id))
    assert membership.lease is not None
    assert stored is not None and stored.lease == membership.lease.id


async def test_a_broker_whose_registration_was_deleted_under_a_live_lease_registers_again(
    cluster: InProcessCluster,
) -> None:
    """Its keep-alives still succeed (as etcd 3.4's did for a lease it had expired after a
    cut-off member rejoined): the broker learns it from the watched key, revokes the old
    lease and registers under a new one."""
    membership = cluster.brokers[3].membership
    old_lease, old_epoch = membership.lease, membership.broker_epoch
    assert old_lease is not None
    assert await cluster.observer.delete_if(broker_key(3), old_epoch)
    await _registered_again(cluster, membership, old_lease, old_epoch)
    assert not await cluster.observer.keep_alive(old_lease.id), "the old lease is revoked"


async def test_live_broker_view_follows_joins_and_deaths(cluster: InProcessCluster) -> None:
    view = cluster.brokers[1].membership

    async def all_three() -> bool:
        return set(view.live_brokers()) == {1, 2, 3}

    await wait_until_async(all_three, "all three brokers in the view", 2.0)
    registrations = view.live_brokers()
    assert registrations[2].url == "http://127.0.0.1:9002"
    assert registrations[2].broker_epoch == cluster.brokers[2].membership.broker_epoch
    await cluster.kill(3)

    async def two_left() -> bool:
        return set(view.live_brokers()) == {1, 2}

    await wait_until_async(two_left, "broker 3 to leave the view", (SESSION_TIMEOUT_MS + 1000) / 1000)


def test_heartbeat_must_be_shorter_than_the_session() -> None:
    with pytest.raises(ValueError, match="must be less than"):
        BrokerMembership(None, BrokerRegistration(broker_id=1, url="http://x"), 1000, 1000)  # type: ignore[arg-type]


async def test_a_broker_cut_off_from_the_store_deregisters_within_one_session(tmp_path: Path) -> None:
    """Its revoke cannot reach etcd; the lease runs out on its own once renewals stop, so the
    broker gives up after one session instead of retrying until the link returns (issue 30:
    a broker stopped while its host was cut off never exited)."""
    session_timeout_ms = 2000
    with EtcdServer(tmp_path / "etcd") as server:
        silent = await CuttableProxy(server.client_port).start()
        store = EtcdMetadataStore([("127.0.0.1", silent.port)])
        membership = BrokerMembership(
            store, BrokerRegistration(broker_id=7, url="http://127.0.0.1:9007"), session_timeout_ms, 500
        )
        try:
            await membership.register()
            silent.block()
            started = time.monotonic()
            async with asyncio.timeout(10 * session_timeout_ms / 1000):
                await membership.deregister()
            took_ms = (time.monotonic() - started) * 1000
        finally:
            await store.close()
            await silent.close()
    assert session_timeout_ms <= took_ms <= session_timeout_ms + 1000
    assert membership.lease is None
