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

if TYPE_CHECKING:
    from broker.node import BrokerNode

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
LATENCY_BUCKETS_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class PartitionOffsetsCollector(Collector):
    """Per-partition offset gauges, read from ``BrokerNode.metrics()`` at scrape time."""

    def __init__(self, node: BrokerNode) -> None:
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
        for partition in self._node.metrics():
            values = [partition.topic, str(partition.partition)]
            log_end.add_metric(values, partition.log_end_offset)
            high_watermark.add_metric(values, partition.high_watermark)
            log_start.add_metric(values, partition.log_start_offset)
        yield log_end
        yield high_watermark
        yield log_start


class HttpMetrics:
    """The registry of one app: request counter, latency histogram, partition gauges."""

    def __init__(self, node: BrokerNode) -> None:
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
        self.registry.register(PartitionOffsetsCollector(node))

    def observe(self, method: str, route: str, status: int, duration_seconds: float) -> None:
        self._requests.labels(method, route, str(status)).inc()
        self._latency.labels(method, route).observe(duration_seconds)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
