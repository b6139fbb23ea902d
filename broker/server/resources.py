"""JSON representations of clusters, brokers, topics and partitions (REST Proxy v3 shapes).

Each resource carries ``kind`` and ``metadata`` (``self``, its URL, and ``resource_name``,
its Confluent resource name ``crn:///kafka=<cluster>/topic=<t>/partition=<p>``) as the
REST Proxy does, and every relation the REST Proxy names is a ``{"related": url}`` link
(``brokers``, ``partitions``, ``configs``, ``replicas``...), so tools that follow links keep
working. What highwater knows beyond the spec is added under names of its own, never
in place of a link: a topic's config overrides inline as ``config_values``, a
partition's replica ids as ``replica_ids`` next to its ``replicas`` link, and its offsets
inline, because that is what readers of this broker need most:
``log_start_offset <= high_watermark <= log_end_offset``.

``partition_body`` is the description a leader sends other brokers on
``/internal/partitions`` (its ``replicas`` is the id list); ``partition_resource`` is
what the public API answers.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from broker.cluster.records import kafka_uuid_text

if TYPE_CHECKING:
    from broker.cluster.records import TopicRecord
    from broker.descriptions import BrokerInfo, PartitionDescription
    from broker.server.host import HttpHost


def _url(node: HttpHost, path: str) -> str:
    return f"{node.advertised_url}{path}"


def related(node: HttpHost, path: str) -> dict[str, str]:
    """The REST Proxy's relationship object: a link, never the related data itself."""
    return {"related": _url(node, path)}


def metadata(node: HttpHost, path: str, *names: str) -> dict[str, str]:
    """``self`` and the Confluent resource name, ``crn:///kafka=<cluster>`` then ``names`` (``topic=t`` ...)."""
    return {"self": _url(node, path), "resource_name": "/".join([f"crn:///kafka={node.cluster_id}", *names])}


def cluster_path(node: HttpHost) -> str:
    return f"/v3/clusters/{node.cluster_id}"


def cluster_body(node: HttpHost) -> dict[str, Any]:
    base = cluster_path(node)
    return {
        "kind": "KafkaCluster",
        "metadata": metadata(node, base),
        "cluster_id": node.cluster_id,
        "controller_id": node.catalog.controller_id(),
        "controller": related(node, f"{base}/brokers/{node.catalog.controller_id()}"),
        "acls": related(node, f"{base}/acls"),
        "brokers": related(node, f"{base}/brokers"),
        "broker_configs": related(node, f"{base}/broker-configs"),
        "consumer_groups": related(node, f"{base}/consumer-groups"),
        "topics": related(node, f"{base}/topics"),
        "partition_reassignments": related(node, f"{base}/topics/-/partitions/-/reassignment"),
    }


def broker_body(node: HttpHost, broker: BrokerInfo) -> dict[str, Any]:
    """``host``/``port`` are those of the broker's HTTP ``url``, the address a REST client reaches it at."""
    path = f"{cluster_path(node)}/brokers/{broker.broker_id}"
    address = urlsplit(broker.url)
    return {
        "kind": "KafkaBroker",
        "metadata": metadata(node, path, f"broker={broker.broker_id}"),
        "cluster_id": node.cluster_id,
        "broker_id": broker.broker_id,
        "host": address.hostname,
        "port": address.port,
        "rack": broker.rack,
        "url": broker.url,
        "kafka_address": broker.kafka_address,
        "draining": broker.draining,
        "configs": related(node, f"{path}/configs"),
        "partition_replicas": related(node, f"{path}/partition-replicas"),
    }


def partition_body(node: HttpHost, partition: PartitionDescription) -> dict[str, Any]:
    """The inter-broker description of a partition: ``replicas`` and ``isr`` as broker id lists."""
    body: dict[str, Any] = {
        "cluster_id": node.cluster_id,
        "topic_name": partition.topic,
        "partition_id": partition.partition,
        "leader_id": partition.leader_id,
        "leader_epoch": partition.leader_epoch,
        "replicas": list(partition.replicas),
        "isr": list(partition.isr),
        "log_start_offset": partition.log_start_offset,
        "low_watermark": partition.low_watermark,
        "last_stable_offset": partition.last_stable_offset,
        "high_watermark": partition.high_watermark,
        "log_end_offset": partition.log_end_offset,
        "open_transactions": list(partition.open_transactions),
    }
    if partition.replicas_state is not None:
        body["replicas_state"] = partition.replicas_state
    return body


def partition_resource(node: HttpHost, partition: PartitionDescription) -> dict[str, Any]:
    """The public partition: the spec's links, the ids as ``replica_ids``; ``leader`` only while there is one."""
    path = f"{cluster_path(node)}/topics/{partition.topic}/partitions/{partition.partition}"
    body = partition_body(node, partition)
    body["replica_ids"] = body.pop("replicas")
    links: dict[str, Any] = {"replicas": related(node, f"{path}/replicas")}
    if partition.leader_id >= 0:
        links["leader"] = related(node, f"{path}/replicas/{partition.leader_id}")
    links["reassignment"] = related(node, f"{path}/reassignment")
    names = (f"topic={partition.topic}", f"partition={partition.partition}")
    return {"kind": "KafkaPartition", "metadata": metadata(node, path, *names), **body, **links}


def topic_resource(
    node: HttpHost,
    name: str,
    *,
    internal: bool,
    replication_factor: int,
    partitions_count: int,
    configs: dict[str, str],
    topic_id: uuid.UUID | None = None,
) -> dict[str, Any]:
    """A topic as the spec shows it, from its parts: also the answer to a ``validate_only`` creation
    (which has no id yet). The id is written as Kafka's tools print one (URL-safe base64)."""
    path = f"{cluster_path(node)}/topics/{name}"
    return {
        "kind": "KafkaTopic",
        "metadata": metadata(node, path, f"topic={name}"),
        "cluster_id": node.cluster_id,
        "topic_name": name,
        "topic_id": None if topic_id is None else kafka_uuid_text(topic_id),
        "is_internal": internal,
        "replication_factor": replication_factor,
        "partitions_count": partitions_count,
        "partitions": related(node, f"{path}/partitions"),
        "configs": related(node, f"{path}/configs"),
        "partition_reassignments": related(node, f"{path}/partitions/-/reassignment"),
        "config_values": [{"name": key, "value": value} for key, value in sorted(configs.items())],
    }


def topic_body(node: HttpHost, topic: TopicRecord) -> dict[str, Any]:
    """A topic from its record: nothing in it needs a partition's leader, so a topic just created
    (its partitions not yet known to this broker) or of 10 000 partitions answers at once."""
    return topic_resource(
        node,
        topic.name,
        internal=topic.internal,
        replication_factor=topic.replication_factor,
        partitions_count=topic.partitions_count,
        configs=node.topic_configs.effective(topic.configs),
        topic_id=topic.topic_id,
    )


def list_body(kind: str, node: HttpHost, path: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    """A collection: every item in one answer, so ``metadata.next`` is always null."""
    return {"kind": kind, "metadata": {"self": _url(node, path), "next": None}, "data": items}
