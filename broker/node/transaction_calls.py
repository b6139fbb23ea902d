"""A partition leader's questions to transaction coordinators: here when this broker coordinates the
id, else over the coordinator's internal API (``broker.server.routes_transactions``).

Errors come back as the coordinator raised them (the error table decodes the bodies),
so a leader refuses a write with the coordinator's own ``INVALID_TXN_STATE`` or
``PRODUCER_FENCED``; a coordinator that moved or cannot be reached is
``NOT_COORDINATOR`` / ``SERVICE_UNAVAILABLE`` for the producer, who retries.
"""

from __future__ import annotations

from broker.cluster.metadata_view import MetadataView
from broker.errors.groups import NotCoordinator
from broker.node.forwarding import Forwarder
from broker.transactions.coordinator import TransactionCoordinator

CALL_TIMEOUT_S = 10.0


class CoordinatorCalls:
    """``broker.replica_io.transactional.TransactionCalls`` for every replica of this broker."""

    def __init__(self, node_id: int, coordinator: TransactionCoordinator, view: MetadataView, forwarder: Forwarder):
        self.node_id = node_id
        self.coordinator = coordinator
        self.view = view
        self.forwarder = forwarder

    async def _coordinator_url(self, transactional_id: str) -> str | None:
        """None when this broker coordinates the id; else the coordinator's inter-broker URL."""
        leader = await self.coordinator.coordinator_id(transactional_id)
        if leader == self.node_id:
            return None
        url = self.view.inter_broker_url(leader)
        if url is None:
            raise NotCoordinator(f"broker {leader} coordinates {transactional_id!r} but its address is unknown")
        return url

    async def verify(
        self, transactional_id: str, producer_id: int, producer_epoch: int, topic: str, partition: int
    ) -> int:
        url = await self._coordinator_url(transactional_id)
        if url is None:
            return await self.coordinator.verify(transactional_id, producer_id, producer_epoch, topic, partition)
        body = {
            "transactional_id": transactional_id,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "topic": topic,
            "partition": partition,
        }
        answer = await self.forwarder.json_call("POST", f"{url}/internal/txn-verify", body, CALL_TIMEOUT_S)
        return int(answer["serial"])

    async def confirm_marker(self, transactional_id: str, producer_id: int, serial: int) -> bool:
        url = await self._coordinator_url(transactional_id)
        if url is None:
            return await self.coordinator.confirm_marker(transactional_id, producer_id, serial)
        body = {"transactional_id": transactional_id, "producer_id": producer_id, "serial": serial}
        answer = await self.forwarder.json_call("POST", f"{url}/internal/txn-confirm", body, CALL_TIMEOUT_S)
        return bool(answer["confirmed"])
