"""Produce and fetch rates per topic: cumulative counters, sampled into bounded histories.

Counting. ``TrafficCounters`` is bumped once per request per partition, never per record
(the record count of a produce is the offsets the append took, of a fetch the offsets the
answer moves a reader past, both known without decoding a record):

* a produce by the node's request router, where the leader appends it; a forwarded
  produce is counted by the leader that served it, never by the broker that forwarded it;
* a fetch where a client's read enters the broker: the HTTP read route and the Kafka
  listener's Fetch (the answer it sends, once, not each pass of its long poll). A read
  that arrives from another broker (a JSON read it forwards for its client, counted
  there) is not counted again, and neither is a read a broker makes for itself: the
  group coordinator's one-record reads that date a lag, or followers' replication
  fetches (served apart, ``broker.replica_io.fetch_handler``). So a lagging group with no
  consumer shows no fetch traffic, and the cluster's rate is the sum of the brokers'.

Sampling. ``ActivitySampler.sample`` runs on a timer and turns the counters' growth
since the last sample into rates; every viewer then reads that last sample. Each topic
keeps at most ``history_samples`` samples (oldest dropped first), and a topic whose
counters are gone (deleted) leaves the history at the next sample.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from broker.record.header import next_offset_after

HISTORY_SAMPLES = 60


@dataclass(slots=True)
class Traffic:
    """Cumulative since the broker started (or the topic was first served here); never decreases."""

    produce_records: int = 0
    produce_bytes: int = 0
    fetch_records: int = 0
    fetch_bytes: int = 0


class TrafficCounters:
    """The counters of one broker, per topic; see the module docstring."""

    def __init__(self) -> None:
        self.topics: dict[str, Traffic] = {}

    def produced(self, topic: str, records: int, size: int) -> None:
        traffic = self.topics.get(topic) or self.topics.setdefault(topic, Traffic())
        traffic.produce_records += records
        traffic.produce_bytes += size

    def fetched(self, topic: str, records: int, size: int) -> None:
        traffic = self.topics.get(topic) or self.topics.setdefault(topic, Traffic())
        traffic.fetch_records += records
        traffic.fetch_bytes += size

    def fetched_batches(self, topic: str, offset: int, data: bytes) -> None:
        """A client read ``data`` (whole batches, as the log serves them) from ``offset``.

        Counts the offsets it moves the reader past: from ``offset`` (which may fall inside
        the first batch) to the end of the last batch, found by hopping from one batch's
        length to the next and reading the last one's offset delta. No header is decoded
        or checked: the log checked each batch when it was appended.
        """
        if not data:
            return
        self.fetched(topic, max(0, next_offset_after(data, offset) - offset), len(data))

    def forget(self, topic: str) -> None:
        self.topics.pop(topic, None)


@dataclass(frozen=True, slots=True)
class Rates:
    produce_records_per_s: float = 0.0
    produce_bytes_per_s: float = 0.0
    fetch_records_per_s: float = 0.0
    fetch_bytes_per_s: float = 0.0

    def to_body(self) -> dict[str, float]:
        return {
            "produce_records_per_s": self.produce_records_per_s,
            "produce_bytes_per_s": self.produce_bytes_per_s,
            "fetch_records_per_s": self.fetch_records_per_s,
            "fetch_bytes_per_s": self.fetch_bytes_per_s,
        }

    @classmethod
    def of_body(cls, body: Mapping[str, Any]) -> Rates:
        return cls(
            float(body["produce_records_per_s"]),
            float(body["produce_bytes_per_s"]),
            float(body["fetch_records_per_s"]),
            float(body["fetch_bytes_per_s"]),
        )

    def __add__(self, other: Rates) -> Rates:
        return Rates(
            self.produce_records_per_s + other.produce_records_per_s,
            self.produce_bytes_per_s + other.produce_bytes_per_s,
            self.fetch_records_per_s + other.fetch_records_per_s,
            self.fetch_bytes_per_s + other.fetch_bytes_per_s,
        )


def rates_between(earlier: Traffic, later: Traffic, elapsed_ms: int) -> Rates:
    """Per-second growth; zero when no time passed (two samples in one millisecond)."""
    if elapsed_ms <= 0:
        return Rates()
    per_s = 1000 / elapsed_ms
    return Rates(
        max(0, later.produce_records - earlier.produce_records) * per_s,
        max(0, later.produce_bytes - earlier.produce_bytes) * per_s,
        max(0, later.fetch_records - earlier.fetch_records) * per_s,
        max(0, later.fetch_bytes - earlier.fetch_bytes) * per_s,
    )


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    time_ms: int
    produce_records_per_s: float
    fetch_records_per_s: float

    def to_body(self) -> dict[str, float | int]:
        return {
            "time_ms": self.time_ms,
            "produce_records_per_s": self.produce_records_per_s,
            "fetch_records_per_s": self.fetch_records_per_s,
        }


class ActivitySampler:
    """The last rates of one broker, per topic and in all, and each topic's bounded history."""

    def __init__(self, history_samples: int = HISTORY_SAMPLES) -> None:
        self.history_samples = history_samples
        self.time_ms: int | None = None
        self.totals = Rates()
        self.latest: dict[str, Rates] = {}
        self.history: dict[str, deque[HistoryPoint]] = {}
        self._previous: dict[str, Traffic] = {}

    def sample(self, counters: TrafficCounters, now_ms: int) -> None:
        """Rates since the previous sample; the first sample only sets the baseline (rates 0).

        A topic first served since the previous sample counts from zero: its counters
        were created at its first request, so all of them fell in this interval.
        """
        elapsed_ms = now_ms - self.time_ms if self.time_ms is not None else 0
        latest: dict[str, Rates] = {}
        for topic, traffic in counters.topics.items():
            rates = rates_between(self._previous.get(topic, Traffic()), traffic, elapsed_ms)
            latest[topic] = rates
            ring = self.history.get(topic) or self.history.setdefault(topic, deque(maxlen=self.history_samples))
            ring.append(HistoryPoint(now_ms, rates.produce_records_per_s, rates.fetch_records_per_s))
        for gone in self.history.keys() - latest.keys():
            del self.history[gone]
        self._previous = {topic: replace(traffic) for topic, traffic in counters.topics.items()}
        self.latest = latest
        self.totals = sum(latest.values(), Rates())
        self.time_ms = now_ms

    def report(self, broker_id: int) -> dict[str, Any]:
        """What the broker serves on its internal route, and what ``merge_reports`` reads."""
        return {
            "broker_id": broker_id,
            "time_ms": self.time_ms,
            **self.totals.to_body(),
            "topics": {
                topic: {**rates.to_body(), "history": [point.to_body() for point in self.history.get(topic, ())]}
                for topic, rates in self.latest.items()
            },
        }


def merge_histories(histories: Iterable[Iterable[Mapping[str, Any]]], interval_ms: int) -> list[dict[str, Any]]:
    """Sum the brokers' histories of one topic, each sample put in its ``interval_ms`` slot.

    Brokers sample on their own timers, so their sample times differ; a slot is named by
    its end time. Oldest first.
    """
    slots: dict[int, list[float]] = {}
    for history in histories:
        for point in history:
            slot = (int(point["time_ms"]) // interval_ms + 1) * interval_ms
            summed = slots.setdefault(slot, [0.0, 0.0])
            summed[0] += float(point["produce_records_per_s"])
            summed[1] += float(point["fetch_records_per_s"])
    return [
        {"time_ms": slot, "produce_records_per_s": produce, "fetch_records_per_s": fetch}
        for slot, (produce, fetch) in sorted(slots.items())
    ]


def merge_reports(
    reports: Mapping[int, Mapping[str, Any] | None], interval_ms: int, visible: Iterable[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The cluster's ``brokers`` and ``topics`` lists from each broker's report (None: it did not answer).

    Every ``visible`` topic is listed (with zero rates and no history if no broker served
    it yet), and only those; a broker's own totals cover every topic, as the principal
    may DESCRIBE the cluster. Brokers by id, topics by name.
    """
    brokers = []
    per_topic: dict[str, list[Mapping[str, Any]]] = {}
    for broker_id, report in sorted(reports.items()):
        totals = Rates.of_body(report) if report is not None else Rates()
        brokers.append({"broker_id": broker_id, "reachable": report is not None, **totals.to_body()})
        for topic, body in (report or {}).get("topics", {}).items():
            per_topic.setdefault(topic, []).append(body)
    topics = []
    for topic in sorted(set(visible)):
        bodies = per_topic.get(topic, [])
        rates = sum((Rates.of_body(body) for body in bodies), Rates())
        history = merge_histories((body["history"] for body in bodies), interval_ms)
        topics.append({"topic_name": topic, **rates.to_body(), "history": history})
    return brokers, topics
