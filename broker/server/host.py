"""What the HTTP routes need from the broker they serve, written down.

The broker (``broker.node.broker_node.BrokerNode``) satisfies ``HttpHost``
structurally. A route asks the node's pieces (the catalog, the describer, the request
router, the controller gateway, ...) and nothing behind them: not the metadata view,
the store or the HTTP session, so what a route may do to the broker is the sum of
these pieces' public calls, and a new need is added here first, where it stays visible.
Which principal may use each route is the route table's business (``route_access``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from broker.console.sampling import ConsoleData
    from broker.groups.coordinator import GroupCoordinator
    from broker.node.catalog import Catalog
    from broker.node.controller_gateway import ControllerGateway
    from broker.node.describing import PartitionDescriber
    from broker.node.forwarding import Forwarder
    from broker.node.replicas import ReplicaManager
    from broker.node.routing import RequestRouter
    from broker.node.security import NodeSecurity
    from broker.topics.configs import TopicConfigs
    from broker.transactions.coordinator import TransactionCoordinator
    from config.broker import BrokerSettings


class HttpHost(Protocol):
    """The broker as the HTTP routes see it."""

    node_id: int
    cluster_id: str
    advertised_url: str
    settings: BrokerSettings
    topic_configs: TopicConfigs

    @property
    def catalog(self) -> Catalog:
        """Topics, partitions and brokers as this broker's metadata knows them."""

    @property
    def describer(self) -> PartitionDescriber:
        """Partitions and topics described by their leaders."""

    @property
    def router(self) -> RequestRouter:
        """Produce and read, answered here or forwarded to the leader."""

    @property
    def replicas(self) -> ReplicaManager:
        """This broker's replicas: the replica fetch they serve, the topics they lead."""

    @property
    def controller_gateway(self) -> ControllerGateway:
        """Topic and config administration, run on (or forwarded to) the controller."""

    @property
    def forwarder(self) -> Forwarder:
        """Calls to other brokers made for a client's request."""

    @property
    def security(self) -> NodeSecurity:
        """Authentication, ACL decisions, quotas, and the stored users, ACLs and quotas."""

    @property
    def groups(self) -> GroupCoordinator:
        """The consumer groups this broker coordinates."""

    @property
    def transactions(self) -> TransactionCoordinator:
        """The transactional ids this broker coordinates."""

    @property
    def console(self) -> ConsoleData:
        """What the web console shows, kept as the broker runs."""
