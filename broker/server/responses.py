"""The JSON answers of the public API as pydantic models: the source of their OpenAPI schemas.

Handlers build their answers as dicts (``resources``, ``group_bodies``); these models
describe them, and the fuzz tier checks every answer it gets against the document made
from them. A response lists every field it may carry, but which ones are present depends
on the request (``acks=0`` answers before the append, ``?timestamp`` adds ``offset``,
only the leader shows ``replicas_state``), so no response field is declared required.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from broker.server.json_records import HeaderInput, RecordData
from broker.server.params import INT64_MAX

Offset = Annotated[int, Field(ge=0, le=INT64_MAX, json_schema_extra={"format": "int64"})]
DateTime = Annotated[
    str,
    Field(
        json_schema_extra={"format": "date-time"},
        description="the record's timestamp, RFC 3339 in UTC; null past the year 9999 (timestamp_ms is exact)",
    ),
]
ThrottleTime = Annotated[
    int, Field(ge=1, description="present when a byte-rate quota delayed this answer: the delay, in ms")
]


def _nothing_required(schema: dict[str, Any]) -> None:
    schema.pop("required", None)


class ResponseBody(BaseModel):
    """Base of the answer models, built only when the OpenAPI document is asked for (``defer_build``).

    Handlers answer with dicts and never validate one against these models, so building
    them at import would only add to every broker's start-up.
    """

    model_config = ConfigDict(json_schema_extra=_nothing_required, defer_build=True)


class Error(BaseModel):
    """Every error; details such as log_start_offset/log_end_offset (416) are added as fields."""

    # Deferred as ResponseBody is: only the OpenAPI document builds it.
    model_config = ConfigDict(extra="allow", defer_build=True)

    error_code: int
    error: str
    message: str
    retriable: bool


class Metadata(ResponseBody):
    self: str
    resource_name: str | None


class CollectionMetadata(ResponseBody):
    self: str
    next: str | None = Field(description="always null: a collection comes whole in one answer")


class Related(ResponseBody):
    related: str


Item = TypeVar("Item", bound=BaseModel)


class ResourceList(ResponseBody, Generic[Item]):
    kind: str
    metadata: CollectionMetadata
    data: list[Item]


class Cluster(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    controller_id: int
    controller: Related
    acls: Related
    brokers: Related
    broker_configs: Related
    consumer_groups: Related
    topics: Related
    partition_reassignments: Related


class Broker(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    broker_id: int
    host: str | None
    port: int | None
    rack: str | None
    url: str
    kafka_address: str | None
    draining: bool = Field(description="being emptied: no new replica is placed on it")
    configs: Related
    partition_replicas: Related


class TopicConfigValue(ResponseBody):
    name: str
    value: str | None


class Topic(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    topic_name: str
    topic_id: str | None = Field(
        description="Kafka's topic id (KIP-516), as Kafka tools print it; null in a validate-only creation's answer"
    )
    is_internal: bool
    replication_factor: int
    partitions_count: int
    partitions: Related
    configs: Related
    partition_reassignments: Related
    config_values: list[TopicConfigValue] = Field(description="the topic's config overrides, inline")


class Partition(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    topic_name: str
    partition_id: int
    leader_id: int
    leader_epoch: int
    replica_ids: list[int]
    isr: list[int]
    log_start_offset: Offset
    low_watermark: int = Field(
        description="the smallest log start offset among the in-sync replicas (DeleteRecords' answer); -1 while unknown"
    )
    last_stable_offset: Offset = Field(description="below it every transaction is decided; read_committed stops here")
    high_watermark: Offset
    log_end_offset: Offset
    open_transactions: list[dict[str, Any]] = Field(
        description="transactions open in the log, oldest first: producer_id, producer_epoch, first_offset, started_ms"
    )
    replicas_state: list[dict[str, Any]] = Field(description="only from the leader")
    leader: Related = Field(description="absent while the partition has no leader")
    replicas: Related
    reassignment: Related


class Offsets(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    topic_name: str
    partition_id: int
    earliest_offset: Offset
    latest_offset: Offset = Field(description="the high watermark")
    last_stable_offset: Offset = Field(description="where read_committed readers stop")
    log_end_offset: Offset
    timestamp: int
    offset: int | None = Field(description="first offset with timestamp >= ?timestamp")


class ProducerId(ResponseBody):
    cluster_id: str
    producer_id: int
    producer_epoch: int


class SizeReport(ResponseBody):
    type: str
    size: int


class DeliveryReport(ResponseBody):
    error_code: int = Field(description="200, or 202 with acks=0 (offset null)")
    cluster_id: str
    topic_name: str
    partition_id: int
    offset: int | None
    timestamp: DateTime | None
    timestamp_ms: int
    key: SizeReport | None
    value: SizeReport | None
    throttle_time_ms: ThrottleTime


class BatchSuccess(ResponseBody):
    id: str | int
    partition_id: int
    offset: int | None
    timestamp: DateTime | None
    timestamp_ms: int


class BatchFailure(ResponseBody):
    id: str | int
    error_code: int
    error: str
    message: str


class BatchResponse(ResponseBody):
    successes: list[BatchSuccess]
    failures: list[BatchFailure]
    throttle_time_ms: ThrottleTime


class BatchAppended(ResponseBody):
    cluster_id: str
    topic_name: str
    partition_id: int
    base_offset: int | None
    last_offset: int | None
    log_append_time: int = Field(description="-1 for CreateTime")
    throttle_time_ms: ThrottleTime


class ReadRecord(ResponseBody):
    topic_name: str
    partition_id: int
    offset: Offset
    timestamp: int
    headers: list[HeaderInput]
    key: RecordData | None
    value: RecordData | None


class ReadResponse(ResponseBody):
    data: list[ReadRecord]
    next_offset: Offset
    high_watermark: Offset
    last_stable_offset: Offset
    log_start_offset: Offset
    throttle_time_ms: ThrottleTime


class ElectedLeader(ResponseBody):
    topic_name: str
    partition_id: int
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]


class ElectedLeaders(ResponseBody):
    elected: list[ElectedLeader]
