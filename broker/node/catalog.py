"""Topics, partitions and brokers as this broker's metadata view knows them.

Lookups only: nothing here waits, forwards or writes. A name the view does not
know is an error the client can act on (``UnknownTopic``, ``UnknownPartition``), and a
partition the topic has but whose record has not reached this broker yet is a
retriable ``LeaderNotAvailable``, never an unknown partition.
"""

from __future__ import annotations

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

    def controller_id(self) -> int:
        return self.view.controller_id

    def brokers(self) -> list[BrokerInfo]:
        return [BrokerInfo(r.broker_id, r.url, r.rack, r.kafka_address) for _, r in sorted(self.view.brokers.items())]

    def topic_names(self) -> list[str]:
        return sorted(self.view.topics)

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
