"""Value types shared by the producer, the consumer and the Spark connector.

They mirror the JSON bodies of the broker's REST Proxy v3 resources field for field,
so a reader of the API docs recognises them. All are immutable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic, Kafka's ``TopicPartition``; hashable, orderable."""

    topic: str
    partition: int


class ConsumerGroupMetadata(NamedTuple):
    """A group member as it is now, Kafka's ``ConsumerGroupMetadata``: offsets sent with a transaction name
    it, so the coordinator refuses them from a member that was fenced since (KIP-447)."""

    group_id: str
    member_id: str
    member_epoch: int


class OffsetAndMetadata(NamedTuple):
    """A committed offset (the next record to read) and the free text committed with it, as Kafka's."""

    offset: int
    metadata: str = ""


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    broker_id: int
    url: str


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as ``GET …/topics/{t}/partitions`` describes it.

    ``leader_id`` is ``None`` while the partition has no leader (no live ISR member).
    Invariant kept by the broker: ``log_start_offset <= high_watermark <= log_end_offset``.
    """

    topic: str
    partition: int
    leader_id: int | None
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    log_start_offset: int
    high_watermark: int
    log_end_offset: int

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """``GET …/partitions/{p}/offset``: ``latest_offset`` is the high watermark, not the log end."""

    earliest_offset: int
    latest_offset: int
    log_end_offset: int
    last_stable_offset: int
    """"Latest" for a ``read_committed`` reader."""


@dataclass(frozen=True, slots=True)
class ProduceAck:
    """The leader's answer to one binary batch; offsets are ``None`` for acks=0 (never appended yet)."""

    partition: int
    base_offset: int | None
    last_offset: int | None
    log_append_time_ms: int


@dataclass(frozen=True, slots=True)
class FetchResult:
    """Raw batches read from a leader and the partition's offsets at the time of the read.

    ``data`` holds whole record batches, all below ``high_watermark``; the first batch may
    start before the offset asked for. ``next_offset`` is where the next read starts.
    """

    data: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    next_offset: int
    last_stable_offset: int = -1
    """-1 from a broker that does not send it; a ``read_committed`` read is bounded by it."""
    aborted: tuple[tuple[int, int], ...] = ()
    """For ``read_committed``: the (producer id, first offset) of each aborted transaction with records here."""
