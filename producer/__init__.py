"""The highwater producer: batching, retrying, idempotent; asyncio (``Producer``) and blocking (``SyncProducer``)."""

from broker.client.errors import ClientConfigError
from broker.client.types import OffsetAndMetadata, TopicPartition
from producer.producer import Producer
from producer.records import RecordMetadata, SendManyResult
from producer.sync import SyncProducer

__all__ = [
    "ClientConfigError",
    "OffsetAndMetadata",
    "Producer",
    "RecordMetadata",
    "SendManyResult",
    "SyncProducer",
    "TopicPartition",
]
