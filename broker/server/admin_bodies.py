"""The answers of the admin operations (configs, replicas, reassignments, consumer assignments), named after the REST Proxy's schemas.

As in ``responses``, the models describe dicts the handlers build, and no response
field is declared required. Configs carry Kafka's sources by name (``source``) and
their ``synonyms`` in Kafka's order of precedence; a replica adds highwater's
``log_end_offset`` when the partition's leader answered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from broker.server.resources import cluster_path
from broker.server.responses import Metadata, Related, ResourceList, ResponseBody

if TYPE_CHECKING:
    from broker.cluster.records import PartitionRecord
    from broker.server.host import HttpHost
    from broker.topics.config_entries import ConfigEntry


class ConfigSynonymData(ResponseBody):
    name: str
    value: str | None
    source: str


class AbstractConfigData(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    name: str
    value: str | None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str = Field(description="Kafka's config source: DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG")
    synonyms: list[ConfigSynonymData]
    documentation: str | None


class TopicConfigData(AbstractConfigData):
    topic_name: str


class BrokerConfigData(AbstractConfigData):
    broker_id: int


class ClusterConfigData(AbstractConfigData):
    config_type: str


class ReplicaData(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    topic_name: str
    partition_id: int
    broker_id: int
    is_leader: bool
    is_in_sync: bool
    broker: Related
    log_end_offset: int = Field(description="highwater's: the replica's log end offset, when the leader answered")


class ReassignmentData(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    topic_name: str
    partition_id: int
    adding_replicas: list[int]
    removing_replicas: list[int]
    replicas: Related


class ConsumerAssignmentData(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    topic_name: str
    partition_id: int
    partition: Related
    lag: Related


TopicConfigDataList = ResourceList[TopicConfigData]
ConsumerAssignmentDataList = ResourceList[ConsumerAssignmentData]
BrokerConfigDataList = ResourceList[BrokerConfigData]
ClusterConfigDataList = ResourceList[ClusterConfigData]
ReplicaDataList = ResourceList[ReplicaData]
ReassignmentDataList = ResourceList[ReassignmentData]


class StartedReassignments(ReassignmentDataList):
    """The moves a drain or a balancing step started, and where its plan had to share a rack."""

    rack_warnings: list[str]


def url(node: HttpHost, path: str) -> str:
    return f"{node.advertised_url}{path}"


def config_body(
    node: HttpHost, kind: str, path: str, entry: ConfigEntry, *, read_only: bool, **owner: Any
) -> dict[str, Any]:
    """One config entry as the REST Proxy shows it; ``owner`` names the topic or broker it belongs to."""
    return {
        "kind": kind,
        "metadata": {"self": url(node, f"{path}/{entry.name}")},
        "cluster_id": node.cluster_id,
        **owner,
        "name": entry.name,
        "value": entry.value,
        "is_default": entry.is_default,
        "is_read_only": read_only,
        "is_sensitive": False,
        "source": entry.source.name,
        "synonyms": [{"name": s.name, "value": s.value, "source": s.source.name} for s in entry.synonyms],
        "documentation": entry.documentation,
    }


def list_of(kind: str, node: HttpHost, path: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """A collection, with ``metadata.next`` null: every list here is answered whole."""
    return {"kind": kind, "metadata": {"self": url(node, path), "next": None}, "data": items}


def topic_path(node: HttpHost, topic: str) -> str:
    return f"{cluster_path(node)}/topics/{topic}"


def reassignment_body(node: HttpHost, record: PartitionRecord) -> dict[str, Any]:
    """A moving partition as the REST Proxy shows it: the replicas it adds and removes."""
    path = f"{topic_path(node, record.topic)}/partitions/{record.partition}"
    return {
        "kind": "KafkaReassignment",
        "metadata": {"self": url(node, f"{path}/reassignment")},
        "cluster_id": node.cluster_id,
        "topic_name": record.topic,
        "partition_id": record.partition,
        "adding_replicas": record.adding_replicas,
        "removing_replicas": record.removing_replicas,
        "replicas": {"related": url(node, f"{path}/replicas")},
    }
