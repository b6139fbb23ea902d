"""The JSON answers of the consumer group routes as pydantic models, the source of their OpenAPI schemas.

``broker.server.group_bodies`` builds these answers; like ``broker.server.responses`` no field
is declared required, since a member that leaves is answered without an assignment epoch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from broker.server.responses import Metadata, Related, ResponseBody


class AssignedPartitions(ResponseBody):
    topic: str
    partitions: list[int]


class ConsumerGroupHeartbeatResponse(ResponseBody):
    kind: str
    member_id: str
    member_epoch: int
    group_epoch: int
    heartbeat_interval_ms: int
    assignment: list[AssignedPartitions]


class ConsumerGroup(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    consumer_group_id: str
    is_simple: bool
    partition_assignor: str
    state: Literal[
        "EMPTY", "ASSIGNING", "RECONCILING", "STABLE", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "DEAD", "UNKNOWN"
    ]
    type: Literal["CONSUMER", "CLASSIC"] = Field(description="CLASSIC: a group of Kafka clients")
    is_mixed_consumer_group: bool
    group_epoch: int
    assignment_epoch: int
    members_count: int
    committed_partitions: int
    coordinator_id: int
    coordinator: Related
    consumers: Related
    lag_summary: Related


class PartitionRef(ResponseBody):
    topic_name: str
    partition_id: int


class Consumer(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    instance_id: None = Field(description="always null: members have no static group.instance.id")
    client_id: str
    member_epoch: int
    subscribed_topics: list[str] | None
    subscribed_topic_regex: str | None
    assignments: Related
    assigned_partitions: list[PartitionRef]
    revoking: list[PartitionRef]
    last_heartbeat_ms: int
    session_timeout_ms: int


class CommittedOffset(ResponseBody):
    topic_name: str
    partition_id: int
    offset: int
    metadata: str
    commit_timestamp_ms: int


class ConsumerGroupOffsets(ResponseBody):
    kind: str
    metadata: Metadata
    consumer_group_id: str
    data: list[CommittedOffset]


class ConsumerLag(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    consumer_group_id: str
    topic_name: str
    partition_id: int
    current_offset: int | None = Field(description="committed offset; null if never committed")
    log_end_offset: int | None = Field(description="the partition's high watermark")
    log_start_offset: int | None
    lag: int | None = Field(
        description="log_end_offset - current_offset (last_stable_offset - current_offset for a group that "
        "reads read_committed); negative when the committed offset is beyond the high watermark (status AHEAD)"
    )
    lag_ms: int | None = Field(description="now - append time of the record at current_offset")
    last_commit_ms: int | None
    consumer_id: str = Field(description='the owning member; "" when no member owns the partition')
    instance_id: None
    client_id: str = Field(description='"" when no member owns the partition')
    status: Literal["OK", "WARN", "STOP", "STALL", "REWIND", "AHEAD"] = Field(
        description="Burrow's verdict; AHEAD: the committed offset is beyond the high watermark"
    )
    last_stable_offset: int | None = Field(description="below it every transaction is decided")
    isolation_level: Literal["read_uncommitted", "read_committed"] = Field(
        description="what the group's members read up to (from their heartbeats); the lag ends there"
    )


class ConsumerGroupLagSummary(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    consumer_group_id: str
    max_lag: int
    max_lag_topic_name: str = Field(description='"" when no lag is known')
    max_lag_partition_id: int = Field(description="-1 when no lag is known")
    max_lag_consumer_id: str = Field(description='"" when no member owns the worst partition')
    max_lag_instance_id: None
    max_lag_client_id: str
    max_lag_consumer: Related
    max_lag_partition: Related
    max_lag_ms: int
    total_lag: int
    partitions: int
    partitions_without_commit: int
    partitions_ahead_of_high_watermark: int
    status: Literal["OK", "WARN", "ERR"]
