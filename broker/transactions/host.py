"""What the transaction coordinator needs from the broker it runs in.

The broker (``broker.node.broker_node.BrokerNode``) satisfies ``TransactionHost``
structurally, so ``broker.transactions`` names no broker module; as for the groups
(``broker.groups.host``), every member here is one the coordinator uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from broker.cluster.controller import Controller
    from broker.cluster.metadata_view import MetadataView
    from broker.groups.host import GroupCatalog, LocalReplicas
    from broker.topics.configs import TopicConfigs
    from config.broker import BrokerSettings


class CoordinatorCalls(Protocol):
    """The controller, local or forwarded to (``broker.node.controller_gateway.ControllerGateway``)."""

    async def on_controller(
        self, method: str, path: str, body: dict | None, local_call: Callable[[Controller], Awaitable[Any]]
    ) -> dict: ...

    async def allocate_producer_id(self) -> int: ...


class BrokerCalls(Protocol):
    """Requests to other brokers' internal API (``broker.node.forwarding.Forwarder``)."""

    async def json_call(self, method: str, url: str, body: dict | None = None, timeout_s: float = 30.0) -> dict: ...


class TransactionHost(Protocol):
    node_id: int
    settings: BrokerSettings
    topic_configs: TopicConfigs
    view: MetadataView
    controller: Controller

    @property
    def catalog(self) -> GroupCatalog: ...
    @property
    def replicas(self) -> LocalReplicas: ...
    @property
    def controller_gateway(self) -> CoordinatorCalls: ...
    @property
    def forwarder(self) -> BrokerCalls: ...
