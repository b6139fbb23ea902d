"""The highwater consumer: pipelined fetching from partition leaders; asyncio (``Consumer``) and blocking (``SyncConsumer``)."""

from broker.client.types import TopicPartition
from consumer.consumer import Consumer
from consumer.errors import (
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
)
from consumer.records import ConsumerRecord
from consumer.sync import SyncConsumer

__all__ = [
    "Consumer",
    "ConsumerRecord",
    "LogTruncationError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeError",
    "SyncConsumer",
    "TopicPartition",
]
