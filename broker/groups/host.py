"""What the group coordinator and the lag report need from the broker they run in.

The broker (``broker.node.broker_node.BrokerNode``) satisfies ``GroupHost``
structurally; ``broker.groups`` names no broker module, so the broker may import the
coordinator without an import circle. Every member here is one the groups code uses,
and nothing else: a new need is added here first, where it stays visible.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from broker.isolation import Isolation

if TYPE_CHECKING:
    from broker.cluster.controller import Controller
    from broker.cluster.metadata_view import MetadataView
    from broker.cluster.records import PartitionRecord
    from broker.descriptions import FetchResult, PartitionDescription
    from broker.replica_io.partition import Partition
    from broker.topics.configs import TopicConfigs
    from config.broker import BrokerSettings


class GroupCatalog(Protocol):
    """Topics and partitions as the broker's metadata knows them (``broker.node.catalog.Catalog``)."""

    def partition_count(self, topic: str) -> int: ...

    def partition_record(self, topic: str, partition: int) -> PartitionRecord:
        """The partition's record; raises ``UnknownTopic``, ``UnknownPartition`` or ``LeaderNotAvailable``."""


class LocalReplicas(Protocol):
    """This broker's replicas (``broker.node.replicas.ReplicaManager``)."""

    def local_partition(self, topic: str, partition: int) -> Partition | None:
        """This broker's replica of the partition, leader or follower; None when it holds none."""


class LeaderDescriptions(Protocol):
    """Partitions as their leaders describe them (``broker.node.describing.PartitionDescriber``)."""

    async def describe_partitions(self, topic: str) -> list[PartitionDescription]:
        """Every partition as its leader describes it, falling back to the local replica's figures."""

    async def leader_descriptions(self, topic: str) -> dict[int, PartitionDescription]:
        """Only the partitions whose leader answered."""


class LeaderReads(Protocol):
    """Reads answered by the partition's leader, wherever it is (``broker.node.routing.RequestRouter``)."""

    async def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        timeout_ms: int,
        *,
        isolation: Isolation = Isolation.READ_UNCOMMITTED,
    ) -> FetchResult: ...


class ControllerCalls(Protocol):
    """The controller, local or forwarded to (``broker.node.controller_gateway.ControllerGateway``)."""

    async def on_controller(
        self, method: str, path: str, body: dict | None, local_call: Callable[[Controller], Awaitable[Any]]
    ) -> dict:
        """Run ``local_call`` on this broker's controller if it is the active one, else forward the request."""


class CoordinatorHost(Protocol):
    """What every coordinator on an internal topic needs (this one and the transactions'): settings, the
    metadata it follows (where its topic lives), the catalog and this broker's replicas of the topic."""

    node_id: int
    settings: BrokerSettings
    topic_configs: TopicConfigs
    view: MetadataView
    controller: Controller

    @property
    def catalog(self) -> GroupCatalog: ...
    @property
    def replicas(self) -> LocalReplicas: ...


class GroupHost(CoordinatorHost, Protocol):
    """The broker as the groups code sees it: a coordinator's host, and the node's pieces the groups ask,
    each through its own protocol."""

    @property
    def describer(self) -> LeaderDescriptions: ...
    @property
    def router(self) -> LeaderReads: ...
    @property
    def controller_gateway(self) -> ControllerCalls: ...
