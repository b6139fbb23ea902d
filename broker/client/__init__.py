"""The HTTP cluster client shared by ``producer``, ``consumer`` and ``spark_connector``.

It knows the broker's public API only; it never imports ``broker.server`` or
``broker.node``, so a client installation needs none of the broker's moving parts.
"""

from broker.client.errors import (
    BrokerUnreachable,
    BufferExhausted,
    ClientConfigError,
    DeliveryTimedOut,
    ProducerClosed,
    decode_error,
)
from broker.client.http import BATCH_CONTENT_TYPE, ClusterClient
from broker.client.metadata import ClusterMetadata
from broker.client.types import (
    BrokerInfo,
    FetchResult,
    PartitionInfo,
    PartitionOffsets,
    ProduceAck,
    TopicPartition,
)

__all__ = [
    "BATCH_CONTENT_TYPE",
    "BrokerInfo",
    "BrokerUnreachable",
    "BufferExhausted",
    "ClientConfigError",
    "ClusterClient",
    "ClusterMetadata",
    "DeliveryTimedOut",
    "FetchResult",
    "PartitionInfo",
    "PartitionOffsets",
    "ProduceAck",
    "ProducerClosed",
    "TopicPartition",
    "decode_error",
]
