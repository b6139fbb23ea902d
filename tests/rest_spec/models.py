"""The REST Proxy v3 shapes, as pydantic models named after the schemas of Confluent's OpenAPI document.

The document itself (``confluentinc/kafka-rest``, ``api/v3/openapi.yaml``) is under the
Confluent Community License, so it is not kept here: these models restate its
*shapes* — which fields are required, their JSON types, their enums — in this
project's own words, and the conformance suite validates every answer against them.

Validation is strict and from the JSON text (``validate``): an integer where a string
is required fails, a ``date-time`` is an RFC 3339 string with a zone (never epoch
milliseconds), a nullable field accepts ``null`` and nothing else stands in for it.
Extra fields are allowed: highwater may add fields (HW, LEO, lag in ms), never rename
or retype one of the spec's. Enums the spec marks extensible are still closed here:
an answer that uses another value is one a client written against the spec may not
understand, so the suite wants to hear about it.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

Model = TypeVar("Model", bound=BaseModel)


class SpecModel(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


def optional() -> Any:
    """A field the answer may leave out but never sends as ``null``: its default is not validated, a ``null`` is."""
    return Field(None)


def validate(model: type[Model], raw: str | bytes) -> Model:
    """``raw`` (a JSON text) as ``model``, strictly: the one way the suite checks an answer."""
    return model.model_validate_json(raw, strict=True)


AclResourceType = Literal["UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"]
AclPatternType = Literal["UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"]
AclOperation = Literal[
    "UNKNOWN",
    "ANY",
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
]
AclPermission = Literal["UNKNOWN", "ANY", "DENY", "ALLOW"]
ConfigSource = Literal[
    "DYNAMIC_CLUSTER_LINK_CONFIG",
    "DYNAMIC_TOPIC_CONFIG",
    "DYNAMIC_BROKER_LOGGER_CONFIG",
    "DYNAMIC_BROKER_CONFIG",
    "DYNAMIC_DEFAULT_BROKER_CONFIG",
    "STATIC_BROKER_CONFIG",
    "DEFAULT_CONFIG",
    "UNKNOWN",
]
ConsumerGroupState = Literal[
    "UNKNOWN", "PREPARING_REBALANCE", "COMPLETING_REBALANCE", "ASSIGNING", "RECONCILING", "STABLE", "DEAD", "EMPTY"
]
ConsumerGroupType = Literal["UNKNOWN", "CLASSIC", "CONSUMER", "SHARE"]
DataType = Literal["BINARY", "JSON", "STRING", "AVRO", "JSONSCHEMA", "PROTOBUF"]


class Error(SpecModel):
    error_code: int
    message: str | None


class Relationship(SpecModel):
    related: str


class ResourceMetadata(SpecModel):
    self: str
    resource_name: str | None = None


class ResourceCollectionMetadata(SpecModel):
    self: str
    next: str | None = None


class Resource(SpecModel):
    kind: str
    metadata: ResourceMetadata


class ResourceCollection(SpecModel):
    kind: str
    metadata: ResourceCollectionMetadata


class ClusterData(Resource):
    cluster_id: str
    controller: Relationship = optional()
    acls: Relationship
    brokers: Relationship
    broker_configs: Relationship
    consumer_groups: Relationship
    topics: Relationship
    partition_reassignments: Relationship


class ClusterDataList(ResourceCollection):
    data: list[ClusterData]


class BrokerData(Resource):
    cluster_id: str
    broker_id: int
    host: str | None = None
    port: int | None = None
    rack: str | None = None
    configs: Relationship
    partition_replicas: Relationship


class BrokerDataList(ResourceCollection):
    data: list[BrokerData]


class TopicData(Resource):
    cluster_id: str
    topic_name: str
    is_internal: bool
    replication_factor: int
    partitions_count: int
    partitions: Relationship
    configs: Relationship
    partition_reassignments: Relationship
    authorized_operations: list[str] = optional()


class TopicDataList(ResourceCollection):
    data: list[TopicData]


class PartitionData(Resource):
    cluster_id: str
    topic_name: str
    partition_id: int
    leader: Relationship = optional()
    replicas: Relationship
    reassignment: Relationship


class PartitionDataList(ResourceCollection):
    data: list[PartitionData]


class PartitionWithOffsetsData(Resource):
    cluster_id: str
    topic_name: str
    partition_id: int
    earliest_offset: int
    latest_offset: int


class ReplicaData(Resource):
    cluster_id: str
    topic_name: str
    partition_id: int
    broker_id: int
    is_leader: bool
    is_in_sync: bool
    broker: Relationship


class ReplicaDataList(ResourceCollection):
    data: list[ReplicaData]


class ReassignmentData(Resource):
    cluster_id: str
    topic_name: str
    partition_id: int
    adding_replicas: list[int]
    removing_replicas: list[int]
    replicas: Relationship


class ReassignmentDataList(ResourceCollection):
    data: list[ReassignmentData]


class ConfigSynonymData(SpecModel):
    name: str
    value: str | None = None
    source: ConfigSource


class AbstractConfigData(Resource):
    cluster_id: str
    name: str
    value: str | None = None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: ConfigSource
    synonyms: list[ConfigSynonymData]


class TopicConfigData(AbstractConfigData):
    topic_name: str


class TopicConfigDataList(ResourceCollection):
    data: list[TopicConfigData]


class BrokerConfigData(AbstractConfigData):
    broker_id: int


class BrokerConfigDataList(ResourceCollection):
    data: list[BrokerConfigData]


class ClusterConfigData(AbstractConfigData):
    config_type: Literal["BROKER"]


class ClusterConfigDataList(ResourceCollection):
    data: list[ClusterConfigData]


class ConsumerGroupData(Resource):
    cluster_id: str
    consumer_group_id: str
    is_simple: bool
    partition_assignor: str
    state: ConsumerGroupState
    type: ConsumerGroupType
    is_mixed_consumer_group: bool
    coordinator: Relationship
    consumers: Relationship
    lag_summary: Relationship


class ConsumerGroupDataList(ResourceCollection):
    data: list[ConsumerGroupData]


class ConsumerData(Resource):
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    instance_id: str | None = None
    client_id: str
    assignments: Relationship


class ConsumerDataList(ResourceCollection):
    data: list[ConsumerData]


class ConsumerAssignmentData(Resource):
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    topic_name: str
    partition_id: int
    partition: Relationship
    lag: Relationship


class ConsumerAssignmentDataList(ResourceCollection):
    data: list[ConsumerAssignmentData]


class ConsumerLagData(Resource):
    cluster_id: str
    consumer_group_id: str
    topic_name: str
    partition_id: int
    current_offset: int
    log_end_offset: int
    lag: int
    consumer_id: str
    instance_id: str | None = None
    client_id: str


class ConsumerLagDataList(ResourceCollection):
    data: list[ConsumerLagData]


class ConsumerGroupLagSummaryData(Resource):
    cluster_id: str
    consumer_group_id: str
    max_lag_consumer_id: str
    max_lag_instance_id: str | None = None
    max_lag_client_id: str
    max_lag_topic_name: str
    max_lag_partition_id: int
    max_lag: int
    total_lag: int
    max_lag_consumer: Relationship
    max_lag_partition: Relationship


class AclData(Resource):
    cluster_id: str
    resource_type: AclResourceType
    resource_name: str
    pattern_type: AclPatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission


class AclDataList(ResourceCollection):
    data: list[AclData]


class DeleteAclsResponse(SpecModel):
    """The spec names this answer only as a response; its body is a bare ``data`` list."""

    data: list[AclData]


class CreateAclRequestData(SpecModel):
    resource_type: AclResourceType
    resource_name: str
    pattern_type: AclPatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission


class CreateAclRequestDataList(SpecModel):
    data: list[CreateAclRequestData]


class ConfigEntryData(SpecModel):
    name: str
    value: str | None = None


class CreateTopicRequestData(SpecModel):
    topic_name: str
    partitions_count: int = optional()
    replication_factor: int = optional()
    replicas_assignments: dict[str, list[int]] = optional()
    configs: list[ConfigEntryData] = optional()
    validate_only: bool = optional()


class AlterConfigEntryData(ConfigEntryData):
    operation: Literal["SET", "DELETE"] | None = None


class AlterConfigBatchRequestData(SpecModel):
    data: list[AlterConfigEntryData]
    validate_only: bool = optional()


class UpdateConfigRequestData(SpecModel):
    value: str | None = None


class UpdatePartitionCountRequestData(SpecModel):
    partitions_count: int


class ProduceRequestHeader(SpecModel):
    name: str
    value: str | None = None


class ProduceRequestData(SpecModel):
    type: DataType = optional()
    subject: str | None = None
    subject_name_strategy: Literal["TOPIC_NAME", "RECORD_NAME", "TOPIC_RECORD_NAME"] | None = None
    schema_id: int | None = None
    schema_version: int | None = None
    schema_: str | None = Field(None, alias="schema")
    data: object = None


class ProduceRequest(SpecModel):
    partition_id: int | None = None
    headers: list[ProduceRequestHeader] = optional()
    key: ProduceRequestData | None = None
    value: ProduceRequestData | None = None
    timestamp: AwareDatetime | None = None


class ProduceBatchRequestEntry(ProduceRequest):
    id: str = Field(min_length=1, max_length=80)


class ProduceBatchRequest(SpecModel):
    entries: list[ProduceBatchRequestEntry]


class ProduceResponseData(SpecModel):
    size: int
    type: DataType | None
    subject: str | None = None
    schema_id: int | None = None
    schema_version: int | None = None


class ProduceResponse(SpecModel):
    error_code: int
    message: str = optional()
    cluster_id: str = optional()
    topic_name: str = optional()
    partition_id: int = optional()
    offset: int = optional()
    timestamp: AwareDatetime | None = None
    key: ProduceResponseData | None = None
    value: ProduceResponseData | None = None


class ProduceBatchResponseSuccessEntry(SpecModel):
    id: str = Field(min_length=1, max_length=80)
    cluster_id: str = optional()
    topic_name: str = optional()
    partition_id: int = optional()
    offset: int = optional()
    timestamp: AwareDatetime | None = None
    key: ProduceResponseData | None = None
    value: ProduceResponseData | None = None


class ProduceBatchResponseFailureEntry(SpecModel):
    id: str = Field(min_length=1, max_length=80)
    error_code: int
    message: str = optional()


class ProduceBatchResponse(SpecModel):
    successes: list[ProduceBatchResponseSuccessEntry] = optional()
    failures: list[ProduceBatchResponseFailureEntry] = optional()
