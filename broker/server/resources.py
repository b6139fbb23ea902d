"""JSON representations of clusters, brokers, topics and partitions (REST Proxy v3 shapes).

Each resource carries ``kind`` and ``metadata.self`` as the REST Proxy does, so tools
that follow links keep working; relations (``brokers``, ``partitions``...) are
``{"related": url}``. Offsets are inline on partitions because that is what readers of
this broker need most: ``log_start_offset <= high_watermark <= log_end_offset``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from broker.descriptions import BrokerInfo, PartitionDescription, TopicDescription
    from broker.node.broker_node import BrokerNode


def _url(node: BrokerNode, path: str) -> str:
    return f"{node.advertised_url}{path}"


def cluster_path(node: BrokerNode) -> str:
    return f"/v3/clusters/{node.cluster_id}"


def cluster_body(node: BrokerNode) -> dict[str, Any]:
    base = cluster_path(node)
    return {
        "kind": "KafkaCluster",
        "metadata": {"self": _url(node, base)},
        "cluster_id": node.cluster_id,
        "controller_id": node.controller_id(),
        "controller": {"related": _url(node, f"{base}/brokers/{node.controller_id()}")},
        "brokers": {"related": _url(node, f"{base}/brokers")},
        "topics": {"related": _url(node, f"{base}/topics")},
    }


def broker_body(node: BrokerNode, broker: BrokerInfo) -> dict[str, Any]:
    return {
        "kind": "KafkaBroker",
        "metadata": {"self": _url(node, f"{cluster_path(node)}/brokers/{broker.broker_id}")},
        "cluster_id": node.cluster_id,
        "broker_id": broker.broker_id,
        "url": broker.url,
        "rack": broker.rack,
        "kafka_address": broker.kafka_address,
    }


def partition_body(node: BrokerNode, partition: PartitionDescription) -> dict[str, Any]:
    path = f"{cluster_path(node)}/topics/{partition.topic}/partitions/{partition.partition}"
    body: dict[str, Any] = {
        "kind": "KafkaPartition",
        "metadata": {"self": _url(node, path)},
        "cluster_id": node.cluster_id,
        "topic_name": partition.topic,
        "partition_id": partition.partition,
        "leader_id": partition.leader_id,
        "leader_epoch": partition.leader_epoch,
        "replicas": list(partition.replicas),
        "isr": list(partition.isr),
        "log_start_offset": partition.log_start_offset,
        "high_watermark": partition.high_watermark,
        "log_end_offset": partition.log_end_offset,
    }
    if partition.replicas_state is not None:
        body["replicas_state"] = partition.replicas_state
    return body


def topic_body(node: BrokerNode, topic: TopicDescription) -> dict[str, Any]:
    path = f"{cluster_path(node)}/topics/{topic.name}"
    return {
        "kind": "KafkaTopic",
        "metadata": {"self": _url(node, path)},
        "cluster_id": node.cluster_id,
        "topic_name": topic.name,
        "is_internal": topic.internal,
        "replication_factor": topic.replication_factor,
        "partitions_count": len(topic.partitions),
        "configs": [{"name": name, "value": value} for name, value in sorted(topic.configs.items())],
        "partitions": {"related": _url(node, f"{path}/partitions")},
    }


def list_body(kind: str, node: BrokerNode, path: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"self": _url(node, path)}, "data": items}
