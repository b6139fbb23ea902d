"""The console's data as JSON: lag history, ISR events, cluster activity (replica offsets:
``routes_console_offsets``).

Each answer is read from what the broker already holds (``broker.console``'s rings,
filled on timers, and the metadata view); no request triggers sampling. The
cluster-wide activity asks every broker at once (``ask_brokers``), with a short timeout,
on the internal route below; a broker that does not answer in time is marked
(``reachable: false``), never a 500 and never a wait longer than ``FANOUT_TIMEOUT_S``.

Authorization follows ``route_access``: DESCRIBE on the group, topic or cluster;
lists that name topics (a group's lag samples, the activity's topics) keep only the
topics the principal may DESCRIBE, and a lag sample's totals are computed over those.
"""

from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING, Any

from aiohttp import web
from pydantic import Field

from broker.console.activity import merge_reports
from broker.console.health import partition_health
from broker.errors.groups import GroupIdNotFound
from broker.groups.shard import OffsetsShard
from broker.server.api_routes import CLUSTER, JSON, OBJECT, TOPIC, Operation, Reply, RouteTable
from broker.server.authorization import describable_topics
from broker.server.params import node_of
from broker.server.responses import ResponseBody
from broker.server.routes_groups import GROUP, GROUP_ID, coordinated

if TYPE_CHECKING:
    from broker.server.host import HttpHost

CLUSTER_PATH = "/v3/clusters/{cluster_id}"
TOPIC_PATH = CLUSTER_PATH + "/topics/{topic_name}"
INTERNAL_ACTIVITY = "/internal/console/activity"
FANOUT_TIMEOUT_S = 1.0
"""How long the answering broker waits for the others: the console polls every second."""
TAGS = ("console",)
routes = RouteTable()


class LagPartition(ResponseBody):
    topic_name: str
    partition_id: int
    committed_offset: int
    high_watermark: int
    lag: int
    lag_ms: int | None = Field(description="age of the record at the committed offset; null when unreadable")


class LagHistorySample(ResponseBody):
    time_ms: int
    total_lag: int
    max_lag_ms: int
    partitions: list[LagPartition]


class ConsumerGroupLagHistory(ResponseBody):
    kind: str
    cluster_id: str
    consumer_group_id: str
    interval_ms: int
    capacity: int
    samples: list[LagHistorySample] = Field(description="oldest first")


class IsrEventBody(ResponseBody):
    time_ms: int
    partition_id: int
    kind: str = Field(description="shrink, expand or leader_change")
    leader_id: int
    leader_epoch: int
    isr: list[int]
    previous_isr: list[int]


class TopicIsrEvents(ResponseBody):
    kind: str
    cluster_id: str
    topic_name: str
    events: list[IsrEventBody] = Field(description="newest first, bounded per topic")


class BrokerActivity(ResponseBody):
    broker_id: int
    reachable: bool
    produce_records_per_s: float
    produce_bytes_per_s: float
    fetch_records_per_s: float
    fetch_bytes_per_s: float


class ActivityPoint(ResponseBody):
    time_ms: int
    produce_records_per_s: float
    fetch_records_per_s: float


class TopicActivity(ResponseBody):
    topic_name: str
    produce_records_per_s: float
    produce_bytes_per_s: float
    fetch_records_per_s: float
    fetch_bytes_per_s: float
    history: list[ActivityPoint]


class ClusterActivity(ResponseBody):
    kind: str
    cluster_id: str
    interval_ms: int
    brokers: list[BrokerActivity]
    topics: list[TopicActivity]
    under_replicated_partitions: int
    under_min_isr_partitions: int
    offline_partitions: int


def operation(summary: str, reply: Reply, *params: Any) -> Operation:
    return Operation(summary, (reply,), (CLUSTER, *params), tags=TAGS)


def internal_operation(summary: str) -> Operation:
    return Operation(summary, (Reply(200, summary, {JSON: OBJECT}),))


async def ask_brokers(node: HttpHost, broker_ids: set[int], path: str) -> dict[int, dict[str, Any] | None]:
    """``GET path`` on each of ``broker_ids`` but this one, at once; None for each that failed or timed out."""
    others = sorted(broker_ids - {node.node_id})

    async def ask(broker_id: int) -> dict[str, Any] | None:
        url = node.catalog.inter_broker_url(broker_id)
        if url is None:
            return None
        try:
            return await node.forwarder.json_call("GET", f"{url}{path}", timeout_s=FANOUT_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - an unreachable broker is reported as such, not as an error
            return None

    return dict(zip(others, await asyncio.gather(*(ask(broker_id) for broker_id in others)), strict=True))


# ------------------------------------------------------------ lag history


@routes.get(
    GROUP + "/lag-history",
    operation(
        "The group's lag sampled over time by its coordinator (oldest first)",
        Reply(200, "lag samples", {JSON: ConsumerGroupLagHistory}),
        GROUP_ID,
    ),
)
@coordinated
async def lag_history(request: web.Request, shard: OffsetsShard, group_id: str) -> web.Response:
    node = node_of(request)
    samples = node.console.lag_history.samples(group_id)
    if not samples and shard.existing_group(group_id) is None:
        raise GroupIdNotFound(f"consumer group {group_id!r} does not exist (no members, no committed offsets)")
    visible = functools.cache(describable_topics(request))  # asked once per topic, not per partition per sample
    settings = node.console.settings
    return web.json_response(
        {
            "kind": "KafkaConsumerGroupLagHistory",
            "cluster_id": node.cluster_id,
            "consumer_group_id": group_id,
            "interval_ms": settings.lag_sample_interval_ms,
            "capacity": settings.lag_history_samples,
            "samples": [sample.body(visible) for sample in samples],
        }
    )


# ------------------------------------------------------------ ISR events


@routes.get(
    TOPIC_PATH + "/isr-events",
    operation(
        "ISR shrinks, expansions and leader changes of the topic's partitions (newest first)",
        Reply(200, "events", {JSON: TopicIsrEvents}),
        TOPIC,
    ),
)
async def isr_events(request: web.Request) -> web.Response:
    node = node_of(request)
    topic = request.match_info["topic_name"]
    node.catalog.topic(topic)
    return web.json_response(
        {
            "kind": "KafkaTopicIsrEvents",
            "cluster_id": node.cluster_id,
            "topic_name": topic,
            "events": [event.to_body() for event in node.console.isr_events.newest_first(topic)],
        }
    )


# ------------------------------------------------------------ activity


@routes.get(
    CLUSTER_PATH + "/activity",
    operation(
        "Produce and fetch rates per broker and per topic, and partition health",
        Reply(200, "activity", {JSON: ClusterActivity}),
    ),
)
async def activity(request: web.Request) -> web.Response:
    node = node_of(request)
    reports = await ask_brokers(node, set(node.catalog.broker_ids()), INTERNAL_ACTIVITY)
    reports[node.node_id] = node.console.activity.report(node.node_id)
    visible = describable_topics(request)
    interval_ms = node.console.settings.activity_sample_interval_ms
    brokers, topics = merge_reports(
        reports, interval_ms, (name for name in node.catalog.topic_names() if visible(name))
    )
    min_isr = {
        name: node.topic_configs.parse(topic.configs).min_insync_replicas
        for name, topic in node.catalog.topic_records().items()
    }
    health = partition_health(node.catalog.partition_records(), lambda name: min_isr.get(name, 1))
    return web.json_response(
        {
            "kind": "KafkaClusterActivity",
            "cluster_id": node.cluster_id,
            "interval_ms": interval_ms,
            "brokers": brokers,
            "topics": topics,
            **health,
        }
    )


@routes.get(INTERNAL_ACTIVITY, internal_operation("This broker's produce and fetch rates, per topic, with history"))
async def internal_activity(request: web.Request) -> web.Response:
    node = node_of(request)
    return web.json_response(node.console.activity.report(node.node_id))
