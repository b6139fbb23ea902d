"""Topics, partitions and brokers as this broker's metadata view knows them.

Lookups only: nothing here forwards or writes, and only ``catch_up_with`` waits (for the
store, when the view lacks what a request names). A name the view does not
know is an error the client can act on (``UnknownTopic``, ``UnknownPartition``), and a
partition the topic has but whose record has not reached this broker yet is a
retriable ``LeaderNotAvailable``, never an unknown partition.
"""

from __future__ import annotations

import uuid

from broker.cluster.metadata_view import MetadataView
from broker.cluster.records import PartitionRecord, TopicRecord
from broker.descriptions import BrokerInfo
from broker.errors import LeaderNotAvailable, UnknownPartition, UnknownTopic
from broker.topics.configs import TopicConfigs


class Catalog:
    """See the module docstring."""

    def __init__(self, node_id: int, view: MetadataView, topic_configs: TopicConfigs) -> None:
        self.node_id = node_id
        self.view = view
        self.topic_configs = topic_configs

    def holds(self, topic: str, partition: int | None) -> bool:
        """Whether the view has ``topic`` (and its ``partition``): two dict look-ups, on every request."""
        return topic in self.view.topics and (partition is None or (topic, partition) in self.view.partitions)

    async def catch_up_with(self, topic: str) -> None:
        """Let the view catch up with the store on ``topic``, which a request names and the view lacks
        (``holds``), so a request naming something just created elsewhere finds it."""
        await self.view.catch_up_with_topic(topic)

    def controller_id(self) -> int:
        return self.view.controller_id

    def brokers(self) -> list[BrokerInfo]:
        return [
            BrokerInfo(r.broker_id, r.url, r.rack, r.kafka_address, r.broker_id in self.view.draining)
            for _, r in sorted(self.view.brokers.items())
        ]

    def broker_configs(self, broker_id: int) -> dict[str, str]:
        """Broker ``broker_id``'s own dynamic configs (``/configs/brokers/<id>``), a copy."""
        return dict(self.view.broker_configs.get(broker_id, {}))

    def broker_ids(self) -> list[int]:
        """The registered brokers, ascending."""
        return sorted(self.view.brokers)

    def broker_url(self, broker_id: int) -> str | None:
        """The broker's advertised URL, None when it is not registered."""
        return self.view.broker_url(broker_id)

    def inter_broker_url(self, broker_id: int) -> str | None:
        """Where another broker reaches it (its inter-broker URL, else its advertised one); None when unregistered."""
        return self.view.inter_broker_url(broker_id)

    def topic_names(self) -> list[str]:
        return sorted(self.view.topics)

    def topic_records(self) -> dict[str, TopicRecord]:
        """Every topic's record by name, a copy the caller may iterate while the view moves on."""
        return dict(self.view.topics)

    def partition_records(self) -> list[PartitionRecord]:
        """Every partition's record that has reached this broker, by topic then partition."""
        return [record for _, record in sorted(self.view.partitions.items())]

    def topic_names_by_id(self) -> dict[uuid.UUID, str]:
        """Every topic's name by its topic id (Kafka clients name topics by id in some requests)."""
        return {topic.topic_id: name for name, topic in self.view.topics.items()}

    def known_topic(self, name: str) -> TopicRecord | None:
        """The topic's record, None when the view does not know it (no error: a sampler skips it)."""
        return self.view.topics.get(name)

    def known_partition_record(self, topic: str, partition: int) -> PartitionRecord | None:
        """The record if it has reached this broker; None otherwise, with no error (a listing skips it)."""
        return self.view.partitions.get((topic, partition))

    def topic(self, name: str) -> TopicRecord:
        topic = self.view.topics.get(name)
        if topic is None:
            raise UnknownTopic(f"topic '{name}' does not exist", topic_name=name)
        return topic

    def partition_count(self, topic: str) -> int:
        return self.topic(topic).partitions_count

    def max_message_bytes(self, topic: str) -> int:
        return self.topic_configs.parse(self.topic(topic).configs).max_message_bytes

    def partition_record(self, topic: str, partition: int) -> PartitionRecord:
        count = self.partition_count(topic)
        record = self.view.partitions.get((topic, partition))
        if record is None and 0 <= partition < count:
            raise LeaderNotAvailable(
                f"{topic}-{partition} was just created and its state has not reached broker {self.node_id} yet; retry",
                topic_name=topic,
                partition_id=partition,
            )
        if record is None:
            raise UnknownPartition(
                f"topic '{topic}' has no partition {partition}; it has partitions 0..{count - 1}",
                topic_name=topic,
                partition_id=partition,
            )
        return record
