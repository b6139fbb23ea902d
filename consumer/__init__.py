"""The highwater consumer: pipelined fetching from partition leaders, consumer groups with committed offsets;
asyncio (``Consumer``) and blocking (``SyncConsumer``)."""

from broker.client.errors import ClientConfigError
from broker.client.types import ConsumerGroupMetadata, TopicPartition
from broker.errors import UnknownTopicOrPartition
from consumer.consumer import Consumer
from consumer.errors import (
    CommitFailedError,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
)
from consumer.records import ConsumerRecord
from consumer.sync import SyncConsumer

__all__ = [
    "ClientConfigError",
    "CommitFailedError",
    "Consumer",
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeError",
    "SyncConsumer",
    "TopicPartition",
    "UnknownTopicOrPartition",
]
