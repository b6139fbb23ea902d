"""What a broker answers about brokers, topics, partitions, produces and reads.

Plain frozen values between ``BrokerNode`` and the HTTP layer, so the server never
touches broker internals.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BrokerInfo:
    """``kafka_address`` is the broker's advertised Kafka listener (``host:port``), None without one;
    ``draining``: being emptied (``highwater brokers drain``), so no new replica is placed on it."""

    broker_id: int
    url: str
    rack: str | None
    kafka_address: str | None = None
    draining: bool = False


@dataclass(frozen=True)
class PartitionDescription:
    """Offsets are the leader's when it answered; ``-1`` when no replica could be asked."""

    topic: str
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    log_start_offset: int
    last_stable_offset: int
    """Below it every transaction is decided: where a ``read_committed`` reader stops."""
    high_watermark: int
    log_end_offset: int
    replicas_state: list[dict] | None
    latest_offset_available: bool
    """False while a new leader's high watermark is below the start of its epoch: the HW a
    previous leader exposed may lie above it, so "latest" is not answered (KIP-207)."""
    low_watermark: int = -1
    """The smallest log start offset among the leader and its in-sync followers (Kafka's low watermark,
    what DeleteRecords answers); -1 until each has fetched, and from a replica that does not lead."""
    open_transactions: tuple[dict, ...] = ()
    """The transactions open in the log, oldest first: ``producer_id``, ``producer_epoch``,
    ``first_offset`` and ``started_ms`` (the first batch's timestamp)."""


@dataclass(frozen=True)
class TopicDescription:
    name: str
    partitions: list[PartitionDescription]
    replication_factor: int
    configs: dict[str, str]
    internal: bool


@dataclass(frozen=True)
class ProduceResult:
    base_offset: int
    last_offset: int
    log_append_time_ms: int


@dataclass(frozen=True)
class FetchResult:
    """Whole batches below the bound the reader's isolation sets (the HW, or the LSO for ``read_committed``).

    ``aborted``: for ``read_committed``, the (producer id, first offset) of every aborted
    transaction with records in the answer, for ``broker.record.committed.kept_batches``.
    """

    data: bytes
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    aborted: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class LeaderState:
    """A partition as its leader sees it now: ``log_start_offset <= high_watermark``."""

    leader_epoch: int
    log_start_offset: int
    high_watermark: int
    latest_offset_available: bool
    """See ``PartitionDescription.latest_offset_available``."""
    last_stable_offset: int
    """"Latest" for a ``read_committed`` reader."""
