"""The REST Proxy v3 schemas of the admin operations, as this project's own pydantic models.

Named after the schemas of Confluent's OpenAPI document (``api/v3/openapi.yaml`` of
confluentinc/kafka-rest), which is not copied here (its licence): each model states
the same shape — which fields are required, their JSON types, which may be null — in
our words. Validation is strict (no coercion: an integer where a string is required
fails), and extra fields are allowed, because highwater may add fields (a replica's
``log_end_offset``) but never renames or retypes the spec's.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

Item = TypeVar("Item", bound=BaseModel)


class SpecModel(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class ResourceMetadata(SpecModel):
    self: str
    resource_name: str | None = None


class ResourceCollectionMetadata(SpecModel):
    self: str
    next: str | None = None


class Relationship(SpecModel):
    related: str


class Resource(SpecModel):
    kind: str
    metadata: ResourceMetadata


class ResourceCollection(SpecModel, Generic[Item]):
    kind: str
    metadata: ResourceCollectionMetadata
    data: list[Item]


class ConfigSynonymData(SpecModel):
    name: str
    value: str | None = None
    source: str


class AbstractConfigData(Resource):
    cluster_id: str
    name: str
    value: str | None = None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str
    synonyms: list[ConfigSynonymData]


class TopicConfigData(AbstractConfigData):
    topic_name: str


class BrokerConfigData(AbstractConfigData):
    broker_id: int


class ClusterConfigData(AbstractConfigData):
    config_type: str


class ReplicaData(Resource):
    cluster_id: str
    topic_name: str
    partition_id: int
    broker_id: int
    is_leader: bool
    is_in_sync: bool
    broker: Relationship


class ReassignmentData(Resource):
    cluster_id: str
    topic_name: str
    partition_id: int
    adding_replicas: list[int]
    removing_replicas: list[int]
    replicas: Relationship


class ConsumerAssignmentData(Resource):
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    topic_name: str
    partition_id: int
    partition: Relationship
    lag: Relationship


class Error(SpecModel):
    error_code: int
    message: str | None = None


TopicConfigDataList = ResourceCollection[TopicConfigData]
BrokerConfigDataList = ResourceCollection[BrokerConfigData]
ClusterConfigDataList = ResourceCollection[ClusterConfigData]
ReplicaDataList = ResourceCollection[ReplicaData]
ReassignmentDataList = ResourceCollection[ReassignmentData]
ConsumerAssignmentDataList = ResourceCollection[ConsumerAssignmentData]

CONFIG_SOURCES = frozenset(
    {
        "DYNAMIC_CLUSTER_LINK_CONFIG",
        "DYNAMIC_TOPIC_CONFIG",
        "DYNAMIC_BROKER_LOGGER_CONFIG",
        "DYNAMIC_BROKER_CONFIG",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
        "DEFAULT_CONFIG",
        "UNKNOWN",
    }
)
"""The spec's ConfigSource values (an extensible enum: a client must accept others, we send only these)."""
