"""Prometheus metrics of the HTTP layer: partition offsets and request counts and latencies.

Each app owns its own ``CollectorRegistry`` (several brokers in one test process must
not share counters). Partition gauges are not kept up to date on every append: a
collector asks the node for its partitions at scrape time, so a scrape always shows
the current ``log_end_offset``, ``high_watermark`` and ``log_start_offset`` and the
produce path pays nothing for metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from broker.acks import Acks

if TYPE_CHECKING:
    from broker.server.host import HttpHost

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PRODUCE_ROUTE_SUFFIXES = ("/records", "/records:batch", "/batches")
LATENCY_BUCKETS_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _acks_label(text: str) -> str:
    """The produce latency's ``acks`` label for the query's raw text; one the handler refused counts as ``invalid``."""
    try:
        return Acks.parse(text).value
    except ValueError:
        return "invalid"


class PartitionOffsetsCollector(Collector):
    """Per-partition offset gauges, read from the describer's ``metrics()`` at scrape time."""

    def __init__(self, node: HttpHost) -> None:
        self._node = node

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = ["topic", "partition"]
        log_end = GaugeMetricFamily(
            "highwater_partition_log_end_offset", "Offset after the last record in the local log.", labels=labels
        )
        high_watermark = GaugeMetricFamily(
            "highwater_partition_high_watermark", "First offset not yet visible to readers.", labels=labels
        )
        log_start = GaugeMetricFamily(
            "highwater_partition_log_start_offset", "First offset still stored.", labels=labels
        )
        last_stable = GaugeMetricFamily(
            "highwater_partition_last_stable_offset",
            "First offset of an undecided transaction (read_committed readers stop here); the HW when none.",
            labels=labels,
        )
        isr_size = GaugeMetricFamily("highwater_partition_isr_size", "In-sync replicas (leader's view).", labels=labels)
        under_replicated = GaugeMetricFamily(
            "highwater_under_replicated_partitions", "Partitions led here whose ISR is smaller than the replicas."
        )
        under_min_isr = GaugeMetricFamily(
            "highwater_under_min_isr_partitions", "Partitions led here whose ISR is below min.insync.replicas."
        )
        under_replicated_count = under_min_isr_count = 0
        for partition in self._node.describer.metrics():
            values = [partition.topic, str(partition.partition)]
            log_end.add_metric(values, partition.log_end_offset)
            high_watermark.add_metric(values, partition.high_watermark)
            log_start.add_metric(values, partition.log_start_offset)
            last_stable.add_metric(values, partition.last_stable_offset)
            if partition.leader_id != self._node.node_id:
                continue
            isr_size.add_metric(values, len(partition.isr))
            under_replicated_count += len(partition.isr) < len(partition.replicas)
            under_min_isr_count += len(partition.isr) < self._effective_min_isr(
                partition.topic, len(partition.replicas)
            )
        under_replicated.add_metric([], under_replicated_count)
        under_min_isr.add_metric([], under_min_isr_count)
        yield from (log_end, high_watermark, log_start, last_stable, isr_size, under_replicated, under_min_isr)

    def _effective_min_isr(self, topic: str, replication_factor: int) -> int:
        """min(min.insync.replicas, replication factor), as Kafka's ``Partition.isUnderMinIsr``:
        a topic with RF 1 and min ISR 2 has every replica in sync and is not under min ISR."""
        record = self._node.catalog.known_topic(topic)
        min_isr = self._node.topic_configs.parse(record.configs).min_insync_replicas if record else 1
        return min(min_isr, replication_factor)


class ConsumerLagCollector(Collector):
    """Lag of the groups this broker coordinates, as last refreshed by the coordinator.

    Only a group's coordinator reports it, so summing over brokers never double counts.
    """

    def __init__(self, node: HttpHost) -> None:
        self._node = node

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = ["group", "topic", "partition"]
        lag = GaugeMetricFamily("highwater_consumer_group_lag", "High watermark minus committed offset.", labels=labels)
        lag_seconds = GaugeMetricFamily(
            "highwater_consumer_group_lag_seconds", "Age of the record at the committed offset.", labels=labels
        )
        for group_id, row in self._node.groups.lag_snapshot:
            values = [group_id, row.topic_name, str(row.partition_id)]
            if row.lag is not None:
                lag.add_metric(values, row.lag)
            if row.lag_ms is not None:
                lag_seconds.add_metric(values, row.lag_ms / 1000)
        yield lag
        yield lag_seconds


class HttpMetrics:
    """The registry of one app: request counter, latency histogram, partition gauges."""

    def __init__(self, node: HttpHost) -> None:
        self.registry = CollectorRegistry()
        self._requests = Counter(
            "highwater_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "highwater_http_request_duration_seconds",
            "Time from receiving a request to its handler returning, by method and route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS_SECONDS,
            registry=self.registry,
        )
        self._produce_latency = Histogram(
            "highwater_produce_request_duration_seconds",
            "Produce requests (JSON, batch and binary) from receipt to answer, by acks.",
            ["acks"],
            buckets=LATENCY_BUCKETS_SECONDS,
            registry=self.registry,
        )
        self._fetch_latency = Histogram(
            "highwater_fetch_request_duration_seconds",
            "Fetch requests from receipt to answer (long-poll time included), consumer or replica.",
            ["kind"],
            buckets=LATENCY_BUCKETS_SECONDS,
            registry=self.registry,
        )
        self.registry.register(PartitionOffsetsCollector(node))
        self.registry.register(ConsumerLagCollector(node))

    def observe(
        self, method: str, route: str, status: int, duration_seconds: float, acks: str = Acks.ALL.value
    ) -> None:
        self._requests.labels(method, route, str(status)).inc()
        self._latency.labels(method, route).observe(duration_seconds)
        if method == "POST" and route.endswith(PRODUCE_ROUTE_SUFFIXES):
            self._produce_latency.labels(_acks_label(acks)).observe(duration_seconds)
        elif method == "GET" and route.endswith("/records"):
            self._fetch_latency.labels("consumer").observe(duration_seconds)
        elif route == "/internal/fetch":
            self.observe_replica_fetch(duration_seconds)

    def observe_replica_fetch(self, duration_seconds: float) -> None:
        """One follower fetch answered, over HTTP or on a replication stream."""
        self._fetch_latency.labels("replica").observe(duration_seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
