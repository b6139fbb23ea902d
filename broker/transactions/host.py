"""What the transaction coordinator needs from the broker it runs in.

The broker (``broker.node.broker_node.BrokerNode``) satisfies ``TransactionHost``
structurally, so ``broker.transactions`` names no broker module; as for the groups
(``broker.groups.host``, whose ``CoordinatorHost`` it extends), every member here is one the
coordinator uses.
"""

from __future__ import annotations

from typing import Protocol

from broker.groups.host import ControllerCalls, CoordinatorHost


class ProducerIdCalls(ControllerCalls, Protocol):
    """The controller, local or forwarded to (``broker.node.controller_gateway.ControllerGateway``), which also
    hands out producer ids."""

    async def allocate_producer_id(self) -> int: ...


class BrokerCalls(Protocol):
    """Requests to other brokers' internal API (``broker.node.forwarding.Forwarder``)."""

    async def json_call(self, method: str, url: str, body: dict | None = None, timeout_s: float = 30.0) -> dict: ...


class TransactionHost(CoordinatorHost, Protocol):
    @property
    def controller_gateway(self) -> ProducerIdCalls: ...
    @property
    def forwarder(self) -> BrokerCalls: ...
