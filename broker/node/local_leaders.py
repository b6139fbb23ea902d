"""This broker's leader replicas as the Kafka listener asks about them: epochs and offsets, never forwarded.

A Kafka client talks to each partition's leader itself (it learned the leader from
Metadata), so a question about a partition this broker does not lead is answered
``NotLeaderOrFollower`` naming the leader it knows of, and the client refreshes its
metadata; nothing here forwards, waits or writes.
"""

from __future__ import annotations

from broker.cluster.metadata_view import MetadataView
from broker.descriptions import LeaderState
from broker.errors import NotLeaderOrFollower
from broker.node.catalog import Catalog
from broker.node.replicas import ReplicaManager
from broker.replica_io.partition import ActiveProducer, Partition


class LocalLeaders:
    """See the module docstring."""

    def __init__(self, node_id: int, catalog: Catalog, view: MetadataView, replicas: ReplicaManager) -> None:
        self.node_id = node_id
        self.catalog = catalog
        self.view = view
        self.replicas = replicas

    def leader_state(self, topic: str, partition: int) -> LeaderState:
        """This broker's leader replica's epoch and offsets; ``NotLeaderOrFollower`` if it does not lead it."""
        local = self._local_leader(topic, partition)
        return LeaderState(
            local.leader_epoch,
            local.log_start_offset,
            local.high_watermark,
            local.latest_offset_available,
            local.last_stable_offset,
        )

    async def active_producers(self, topic: str, partition: int) -> list[ActiveProducer]:
        """The producers this broker's leader replica knows (Kafka's DescribeProducers)."""
        return await self._local_leader(topic, partition).active_producers()

    def log_start_offset(self, topic: str, partition: int) -> int:
        """The leader's log start offset, or -1 when this broker does not (or no longer) lead it."""
        local = self.replicas.local_partition(topic, partition)
        return local.log_start_offset if local is not None and local.is_leader else -1

    def end_offset_for_epoch(self, topic: str, partition: int, leader_epoch: int) -> tuple[int, int]:
        """Kafka's OffsetsForLeaderEpoch answer from the leader's epoch cache: (epoch, end offset)."""
        return self._local_leader(topic, partition).log.end_offset_for_epoch(leader_epoch)

    def _local_leader(self, topic: str, partition: int) -> Partition:
        record = self.catalog.partition_record(topic, partition)
        local = self.replicas.local_partition(topic, partition)
        if local is None or not local.is_leader:
            raise NotLeaderOrFollower(
                f"broker {self.node_id} is not the leader of {topic}-{partition}; broker {record.leader} is",
                leader_id=record.leader,
                leader_url=self.view.broker_url(record.leader),
            )
        return local
