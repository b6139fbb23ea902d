"""Several brokers' membership + controller in one event loop, on one real sqlite file.

Each ``InProcessBroker`` opens its own store connection, as a broker process would.
``kill`` stands for SIGKILL: tasks stop and the connection closes, but the lease is
NOT revoked, so the registration and any ``/controller`` key linger until the lease
expires. ``shutdown`` is the clean path: controlled shutdown first, then deregister.

The controllers run without the periodic preferred-leader rebalance
(``MANUAL_SETTINGS``) unless a test passes settings of its own, so every leadership
a test sees move is one the test caused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from broker.cluster.controller import Controller, ControllerSettings
from broker.cluster.membership import BrokerMembership
from broker.cluster.records import (
    PARTITIONS_PREFIX,
    BrokerRegistration,
    PartitionRecord,
)
from broker.cluster.store import MetadataStore
from broker.cluster.store_url import open_store
from tests.support.waiting import wait_until_async

T = TypeVar("T")

SESSION_TIMEOUT_MS = 1000
MANUAL_SETTINGS = ControllerSettings(auto_leader_rebalance_enable=False)
HEARTBEAT_INTERVAL_MS = 200
TAKEOVER_MARGIN_MS = 500
FAILOVER_MARGIN_MS = 1000
"""Allowed beyond the session timeout for detection, election and reconciliation."""


@dataclass
class InProcessBroker:
    broker_id: int
    store: MetadataStore
    membership: BrokerMembership
    controller: Controller

    async def kill(self) -> None:
        await self.controller.close()
        await self.membership.close()
        await self.store.close()

    async def shutdown(self, active_controller: Controller) -> None:
        await active_controller.controlled_shutdown(self.broker_id)
        await self.controller.close()
        await self.membership.deregister()
        await self.store.close()


@dataclass
class InProcessCluster:
    url: str
    observer: MetadataStore
    settings: ControllerSettings = MANUAL_SETTINGS
    brokers: dict[int, InProcessBroker] = field(default_factory=dict)

    async def start_broker(self, broker_id: int, rack: str | None = None) -> InProcessBroker:
        store = await open_store(self.url)
        registration = BrokerRegistration(broker_id=broker_id, url=f"http://127.0.0.1:{9000 + broker_id}", rack=rack)
        membership = BrokerMembership(
            store, registration, SESSION_TIMEOUT_MS, HEARTBEAT_INTERVAL_MS, takeover_margin_ms=TAKEOVER_MARGIN_MS
        )
        await membership.register()
        controller = Controller(store, membership, self.settings)
        await controller.start()
        broker = InProcessBroker(broker_id, store, membership, controller)
        self.brokers[broker_id] = broker
        return broker

    async def kill(self, broker_id: int) -> None:
        await self.brokers.pop(broker_id).kill()

    def active_controllers(self) -> list[InProcessBroker]:
        return [b for b in self.brokers.values() if b.controller.is_active]

    async def wait_for_controller(self, timeout_s: float = 5.0) -> InProcessBroker:
        async def single_active() -> InProcessBroker | None:
            active = self.active_controllers()
            assert len(active) <= 1, f"two active controllers: {[b.broker_id for b in active]}"
            return active[0] if active else None

        return await wait_until_async(single_active, "an active controller", timeout_s)

    async def wait_until_controller_sees(self, broker_ids: set[int], timeout_s: float = 5.0) -> InProcessBroker:
        """The active controller, once its live broker set is exactly ``broker_ids``."""

        async def sees_them() -> InProcessBroker | None:
            active = self.active_controllers()
            if active and active[0].controller.active_term().live_broker_ids() == broker_ids:
                return active[0]
            return None

        return await wait_until_async(sees_them, f"the controller to see brokers {sorted(broker_ids)}", timeout_s)

    async def partitions(self, topic: str) -> list[PartitionRecord]:
        items, _ = await self.observer.list(f"{PARTITIONS_PREFIX}{topic}/")
        records = [PartitionRecord.model_validate_json(kv.value) for kv in items]
        return sorted(records, key=lambda r: r.partition)

    async def close(self) -> None:
        for broker in list(self.brokers.values()):
            await broker.kill()
        self.brokers.clear()
        await self.observer.close()


async def start_cluster(
    tmp_path: Path,
    broker_ids: list[int],
    settings: ControllerSettings | None = None,
    racks: dict[int, str] | None = None,
    url: str | None = None,
) -> InProcessCluster:
    """Start brokers in order; the first becomes the controller before the others join.
    The store is a sqlite file in ``tmp_path`` unless ``url`` names another."""
    url = url or f"sqlite://{tmp_path / 'metadata.db'}"
    cluster = InProcessCluster(url, await open_store(url), settings or MANUAL_SETTINGS)
    rack_of = racks or {}
    first, *others = broker_ids
    await cluster.start_broker(first, rack_of.get(first))
    await cluster.wait_for_controller()
    for broker_id in others:
        await cluster.start_broker(broker_id, rack_of.get(broker_id))
    await cluster.wait_until_controller_sees(set(broker_ids))
    return cluster
