"""What the group coordinator and the lag report need from the broker they run in.

The broker (``broker.node.broker_node.BrokerNode``) satisfies ``GroupHost``
structurally; ``broker.groups`` names no broker module, so the broker may import the
coordinator without an import circle. Every member here is one the groups code uses,
and nothing else: a new need is added here first, where it stays visible.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from broker.cluster.controller import Controller
    from broker.cluster.metadata_view import MetadataView
    from broker.cluster.records import PartitionRecord
    from broker.descriptions import FetchResult, PartitionDescription
    from broker.replica_io.partition import Partition
    from broker.topics.configs import TopicConfigs
    from config.broker import BrokerSettings


class GroupHost(Protocol):
    """The broker as the groups code sees it."""

    node_id: int
    settings: BrokerSettings
    topic_configs: TopicConfigs
    view: MetadataView
    controller: Controller

    def local_partition(self, topic: str, partition: int) -> Partition | None:
        """This broker's replica of the partition, leader or follower; None when it holds none."""

    def partition_count(self, topic: str) -> int: ...

    def partition_record(self, topic: str, partition: int) -> PartitionRecord:
        """The partition's record; raises ``UnknownTopic``, ``UnknownPartition`` or ``LeaderNotAvailable``."""

    async def describe_partitions(self, topic: str) -> list[PartitionDescription]:
        """Every partition as its leader describes it, falling back to the local replica's figures."""

    async def leader_descriptions(self, topic: str) -> dict[int, PartitionDescription]:
        """Only the partitions whose leader answered."""

    async def fetch(self, topic: str, partition: int, offset: int, max_bytes: int, timeout_ms: int) -> FetchResult:
        """Read from the partition's leader, wherever it is."""

    async def on_controller(
        self, method: str, path: str, body: dict | None, local_call: Callable[[Controller], Awaitable[Any]]
    ) -> dict:
        """Run ``local_call`` on this broker's controller if it is the active one, else forward the request."""
