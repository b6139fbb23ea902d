"""Bodies of the REST Proxy v2 consumer API, in the field names v2 clients send and read.

Confluent sends ``auto.commit.enable`` and ``fetch.min.bytes`` as strings (its entity
takes strings); both a string and a JSON boolean or integer are accepted here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, RootModel

from broker.groups.rest_instances import InstanceConfig
from broker.isolation import Isolation
from broker.server.params import INT64_MAX, JsonInt
from broker.server.partition_ids import PartitionId

MAX_INSTANCE_NAME = 200


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError("must be true or false")


def _number_text(value: Any) -> int:
    """A decimal string (Confluent's form), or a JSON integer (``5.0`` included, as ``JsonInt``)."""
    if isinstance(value, str) and value.removeprefix("-").isascii() and value.removeprefix("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be an integer")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("must be an integer")
    return int(value)


Flag = Annotated[bool, BeforeValidator(_flag)]
IntText = Annotated[int, BeforeValidator(_number_text)]


class CreateConsumerInstanceRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = Field(None, min_length=1, max_length=MAX_INSTANCE_NAME, pattern=r"^[A-Za-z0-9._-]+$")
    id: str | None = Field(None, description="legacy alias of name")
    format: str = Field(
        "binary",
        description="json or binary; avro, protobuf and jsonschema are not served (422, 42204)",
        json_schema_extra={"enum": ["json", "binary"]},
    )
    auto_offset_reset: Literal["earliest", "latest", "none"] = Field("latest", alias="auto.offset.reset")
    auto_commit_enable: Flag = Field(True, alias="auto.commit.enable")
    fetch_min_bytes: IntText = Field(
        -1,
        alias="fetch.min.bytes",
        ge=-1,
        le=INT64_MAX,
        description=(
            "bytes (records' keys and values) a read gathers before it answers, unless its timeout elapses"
            " first; -1 or 0: a read answers as soon as any record is readable"
        ),
    )
    consumer_request_timeout_ms: IntText = Field(1000, alias="consumer.request.timeout.ms", ge=0, le=3_600_000)
    isolation_level: Literal["read_uncommitted", "read_committed"] = Field(
        "read_uncommitted",
        alias="isolation.level",
        description="read_committed: reads stop at the last stable offset and drop aborted transactions' records",
    )
    consumer_instance_timeout_ms: Annotated[int, Field(ge=100, le=3_600_000), BeforeValidator(_number_text)] | None = (
        Field(
            None,
            alias="consumer.instance.timeout.ms",
            description="highwater extra: a shorter idle timeout than the broker's; never a longer one",
        )
    )

    def config(self, format_: str, broker_timeout_ms: int) -> InstanceConfig:
        timeout_ms = broker_timeout_ms
        if self.consumer_instance_timeout_ms is not None:
            timeout_ms = min(timeout_ms, self.consumer_instance_timeout_ms)
        return InstanceConfig(
            format_,
            self.auto_offset_reset,
            self.auto_commit_enable,
            self.fetch_min_bytes,
            self.consumer_request_timeout_ms,
            timeout_ms,
            Isolation(self.isolation_level),
        )


class CreateConsumerInstanceResponse(BaseModel):
    instance_id: str
    base_uri: str


class ConsumerSubscriptionRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topics: list[Annotated[str, Field(min_length=1, max_length=249)]] | None = None
    topic_pattern: str | None = Field(None, min_length=1)


class ConsumerSubscriptionResponse(BaseModel):
    topics: list[str]


class TopicPartition(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topic: str = Field(min_length=1, max_length=249)
    partition: PartitionId


class ConsumerAssignmentRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    partitions: list[TopicPartition]


class ConsumerAssignmentResponse(BaseModel):
    partitions: list[TopicPartition]


class ConsumerSeekToRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    partitions: list[TopicPartition] = Field(min_length=1)


class SeekOffset(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topic: str = Field(min_length=1, max_length=249)
    partition: PartitionId
    offset: JsonInt = Field(ge=0, le=INT64_MAX)
    metadata: str | None = None


class ConsumerSeekRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    offsets: list[SeekOffset] = Field(min_length=1)


class ConsumerOffsetCommitRequest(BaseModel):
    """``offsets`` name the last record consumed: ``offset + 1`` is committed, as Confluent does."""

    model_config = ConfigDict(extra="forbid", strict=True)

    offsets: list[SeekOffset] | None = None


class ConsumerCommittedRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    partitions: list[TopicPartition] = Field(min_length=1)


class CommittedOffset(BaseModel):
    topic: str
    partition: int
    offset: int
    metadata: str


class ConsumerCommittedResponse(BaseModel):
    offsets: list[CommittedOffset]


class ConsumerRecord(BaseModel):
    topic: str
    key: Any = None
    value: Any = None
    partition: int
    offset: int


class ConsumerRecords(RootModel[list[ConsumerRecord]]):
    """A records read's answer: a JSON array."""
