"""Replica offsets for the console: per partition, every replica's LEO against the high
watermark and the log start, and the size of the leader's log; for one topic, or for every
topic the principal may DESCRIBE in one answer.

Only a partition's leader knows its followers' LEOs (from their fetches), so the answering
broker asks every leader at once on the internal routes below (``ask_brokers``: at most
``FANOUT_TIMEOUT_S``) and answers for what it leads itself without a request. A partition
whose leader did not answer, or that has none, is listed from the metadata with its
offsets null and ``reachable: false``: never a 500. Two brokers may both claim a partition
for a moment while its leadership moves: the answer with the higher leader epoch is the
current leader's.

The cluster-wide answer is what the overview and topics pages poll: one request to the
broker and one to each other broker, whatever the number of topics, where one request per
topic was needed before. It lists only the topics the principal may DESCRIBE, as the topic
list does; the leaders answer for all they lead, and the asking broker leaves out the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pydantic import Field

from broker.server.api_routes import JSON, TOPIC, Reply, RouteTable
from broker.server.authorization import describable_topics
from broker.server.params import node_of
from broker.server.responses import ResponseBody
from broker.server.routes_console_data import CLUSTER_PATH, TOPIC_PATH, ask_brokers, internal_operation, operation

if TYPE_CHECKING:
    from broker.cluster.records import PartitionRecord
    from broker.server.host import HttpHost

INTERNAL_REPLICA_OFFSETS = "/internal/console/replica-offsets"
routes = RouteTable()


class ReplicaOffset(ResponseBody):
    broker_id: int
    log_end_offset: int | None
    in_sync: bool
    caught_up_ms_ago: int | None


class PartitionReplicaOffsets(ResponseBody):
    partition_id: int
    leader_id: int
    leader_epoch: int
    isr: list[int]
    log_start_offset: int | None
    high_watermark: int | None
    replicas: list[ReplicaOffset]
    size_bytes: int | None = Field(
        description="the leader's log on disk: the sum of its segment files, records above the HW included"
    )
    reachable: bool = Field(description="false: the leader did not answer; offsets are null")


class TopicReplicaOffsets(ResponseBody):
    kind: str
    cluster_id: str
    topic_name: str
    partitions: list[PartitionReplicaOffsets]


class TopicOffsets(ResponseBody):
    topic_name: str
    partitions: list[PartitionReplicaOffsets]


class ClusterReplicaOffsets(ResponseBody):
    kind: str
    cluster_id: str
    topics: list[TopicOffsets] = Field(description="every topic the principal may DESCRIBE, by name")


def _log_size(node: HttpHost, topic: str, partition: int) -> int | None:
    """The local replica's segment bytes, kept in memory by the log: no file is opened or stat'ed."""
    local = node.replicas.local_partition(topic, partition)
    return None if local is None else local.log.size_bytes


def _led_offsets(node: HttpHost, topic: str) -> list[dict[str, Any]]:
    """The partitions of ``topic`` this broker leads, with every replica's LEO as the leader tracks it,
    and the size of its own log (a leader knows its followers' offsets, not their files)."""
    return [
        {
            "partition_id": described.partition,
            "leader_id": described.leader_id,
            "leader_epoch": described.leader_epoch,
            "isr": list(described.isr),
            "log_start_offset": described.log_start_offset,
            "last_stable_offset": described.last_stable_offset,
            "high_watermark": described.high_watermark,
            "replicas": [
                {key: replica[key] for key in ("broker_id", "log_end_offset", "in_sync", "caught_up_ms_ago")}
                for replica in described.replicas_state or ()
            ],
            "size_bytes": _log_size(node, topic, described.partition),
            "reachable": True,
        }
        for described in node.describer.describe_led_partitions(topic)
    ]


def _all_led_offsets(node: HttpHost) -> dict[str, list[dict[str, Any]]]:
    """``_led_offsets`` of every topic this broker leads a partition of."""
    led = node.replicas.led_topics()
    return {topic: _led_offsets(node, topic) for topic in led}


def _unanswered(record: PartitionRecord) -> dict[str, Any]:
    """A partition whose leader did not answer (or that has none): what the metadata says, offsets null."""
    return {
        "partition_id": record.partition,
        "leader_id": record.leader,
        "leader_epoch": record.leader_epoch,
        "isr": list(record.isr),
        "log_start_offset": None,
        "last_stable_offset": None,
        "high_watermark": None,
        "replicas": [
            {
                "broker_id": broker_id,
                "log_end_offset": None,
                "in_sync": broker_id in record.isr,
                "caught_up_ms_ago": None,
            }
            for broker_id in record.replicas
        ],
        "size_bytes": None,
        "reachable": False,
    }


def _merged(
    records: Iterable[PartitionRecord], reports: Iterable[Mapping[str, Any] | None]
) -> dict[str, list[dict[str, Any]]]:
    """Per topic, its ``records`` in order, each as its leader answered (the highest epoch's) or unanswered."""
    answered: dict[tuple[str, int], dict[str, Any]] = {}
    for report in reports:
        for topic, items in (report or {}).get("topics", {}).items():
            for item in items:
                key = (topic, item["partition_id"])
                known = answered.get(key)
                if known is None or item["leader_epoch"] > known["leader_epoch"]:
                    answered[key] = item
    merged: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        item = answered.get((record.topic, record.partition)) or _unanswered(record)
        merged.setdefault(record.topic, []).append(item)
    return merged


async def _offsets(
    node: HttpHost, records: list[PartitionRecord], path: str, own: dict[str, list[dict[str, Any]]]
) -> dict[str, list[dict[str, Any]]]:
    """The merged offsets of ``records``, asking their leaders ``path``; ``own``: this broker's answer."""
    leaders = {record.leader for record in records if record.leader >= 0}
    reports: dict[int, Mapping[str, Any] | None] = dict(await ask_brokers(node, leaders, path))
    reports[node.node_id] = {"topics": own}
    return _merged(records, reports.values())


@routes.get(
    TOPIC_PATH + "/replica-offsets",
    operation(
        "Every partition's replicas' log end offsets, high watermark, log start and size, from each leader",
        Reply(200, "replica offsets", {JSON: TopicReplicaOffsets}),
        TOPIC,
    ),
)
async def replica_offsets(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    count = node.catalog.partition_count(topic)
    records = [record for p in range(count) if (record := node.catalog.known_partition_record(topic, p)) is not None]
    path = f"{INTERNAL_REPLICA_OFFSETS}/{topic}"
    merged = await _offsets(node, records, path, {topic: _led_offsets(node, topic)})
    return web.json_response(
        {
            "kind": "KafkaTopicReplicaOffsets",
            "cluster_id": node.cluster_id,
            "topic_name": topic,
            "partitions": merged.get(topic, []),
        }
    )


@routes.get(
    CLUSTER_PATH + "/replica-offsets",
    operation(
        "Every describable topic's partitions: replicas' log end offsets, high watermark, log start and size",
        Reply(200, "replica offsets of every topic the principal may DESCRIBE", {JSON: ClusterReplicaOffsets}),
    ),
)
async def cluster_replica_offsets(request: web.Request) -> web.Response:
    node = node_of(request)
    visible = describable_topics(request)
    topics = [name for name in node.catalog.topic_names() if visible(name)]
    shown = set(topics)
    records = [record for record in node.catalog.partition_records() if record.topic in shown]
    merged = await _offsets(node, records, INTERNAL_REPLICA_OFFSETS, _all_led_offsets(node))
    return web.json_response(
        {
            "kind": "KafkaClusterReplicaOffsets",
            "cluster_id": node.cluster_id,
            "topics": [{"topic_name": name, "partitions": merged.get(name, [])} for name in topics],
        }
    )


@routes.get(
    INTERNAL_REPLICA_OFFSETS + "/{topic}",
    internal_operation("Replica offsets of the partitions of a topic this broker leads"),
)
async def internal_replica_offsets(request: web.Request) -> web.Response:
    topic = request.match_info["topic"]
    return web.json_response({"topics": {topic: _led_offsets(node_of(request), topic)}})


@routes.get(
    INTERNAL_REPLICA_OFFSETS,
    internal_operation("Replica offsets of every partition this broker leads, by topic"),
)
async def internal_all_replica_offsets(request: web.Request) -> web.Response:
    return web.json_response({"topics": _all_led_offsets(node_of(request))})
