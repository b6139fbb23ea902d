"""Background load for failure tests: a producer and a consumer, each on its own thread.

Both talk to whichever live broker they pick for each request (the brokers forward to
the leader), so they keep going across leader changes the way a client would, and they
record what they observed instead of asserting on their thread: the test asserts on
the records afterwards, where a failure is reported properly.

``BackgroundProducer`` writes unique values ("p-<n>"), one attempt per value, and keeps
every acknowledgement with the time its request started and ended, so the test can
tell which successes came after a fault. ``BackgroundConsumer`` long-polls from its
position and checks each page as a Kafka consumer would see it: records start at the
position, are dense, and lie below the high watermark the page reports.
``LatestOffsetWatcher`` asks any live broker for partitions' ``latest_offset`` (the HW
a reader seeks "to the end" by), one request at a time, and records every answer
below one given before: "latest" never goes backwards (KIP-207).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self

from tests.support.cluster import Cluster
from tests.support.replication import TOPIC, Description, fetch_page, produce_one, wait_for_isr, wait_for_leader
from tests.support.waiting import TRANSIENT_ERRORS, wait_until

RETRY_BACKOFF_S = 0.02
"""A client's pause after a failed request before its next one. It is a backoff, not a wait:
nothing tells a client when a broker that refused or dropped a request will take the next, and
without it the thread would spin against a dead broker."""


@dataclass(frozen=True)
class Acknowledgement:
    offset: int
    value: str
    started_s: float
    ended_s: float


def _live_broker(cluster: Cluster, rng: random.Random) -> int | None:
    """A running broker (possibly paused: a client meets those too), or None while every one is down;
    the loops then wait, where asking "any broker" would find none (the threads died on it)."""
    live = [broker_id for broker_id, broker in cluster.brokers.items() if broker.alive]
    return rng.choice(live) if live else None


@dataclass
class _Background:
    """A loop (``_run``) on a thread of its own, from ``start`` until ``stop``."""

    _stop: threading.Event = field(default_factory=threading.Event, kw_only=True)
    _thread: threading.Thread | None = field(default=None, kw_only=True)

    def start(self) -> Self:
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(30)

    def _run(self) -> None:
        raise NotImplementedError


@dataclass
class BackgroundProducer(_Background):
    cluster: Cluster
    topic: str = TOPIC
    acks: str = "all"
    timeout_ms: int = 3000
    seed: int = 1
    acknowledged: list[Acknowledgement] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def _run(self) -> None:
        rng = random.Random(self.seed)
        sequence = 0
        while not self._stop.is_set():
            via = _live_broker(self.cluster, rng)
            if via is None:
                self._stop.wait(RETRY_BACKOFF_S)
                continue
            value = f"p-{sequence}"
            sequence += 1
            started_s = time.monotonic()
            try:
                status, reply = produce_one(self.cluster, self.topic, value, self.acks, self.timeout_ms, via=via)
            except TRANSIENT_ERRORS as error:
                self.errors.append(type(error).__name__)
                time.sleep(RETRY_BACKOFF_S)
                continue
            if status == 200:
                self.acknowledged.append(Acknowledgement(reply["offset"], value, started_s, time.monotonic()))
            else:
                self.errors.append(reply.get("error", str(status)))
                time.sleep(RETRY_BACKOFF_S)

    def first_success_started_after(self, moment_s: float) -> Acknowledgement | None:
        return next((a for a in list(self.acknowledged) if a.started_s >= moment_s), None)


@dataclass
class BackgroundConsumer(_Background):
    """Reads everything from offset 0; ``violations`` lists every page a reader must never get."""

    cluster: Cluster
    topic: str = TOPIC
    seed: int = 2
    position: int = 0
    seen: list[tuple[int, str]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def _run(self) -> None:
        rng = random.Random(self.seed)
        while not self._stop.is_set():
            via = _live_broker(self.cluster, rng)
            if via is None:
                self._stop.wait(RETRY_BACKOFF_S)
                continue
            try:
                status, page = fetch_page(self.cluster, self.topic, self.position, via, timeout_ms=200)
            except TRANSIENT_ERRORS as error:
                self.errors.append(type(error).__name__)
                time.sleep(RETRY_BACKOFF_S)
                continue
            if status != 200:
                self._on_error(page)
                continue
            self._check_page(page)

    def _on_error(self, page: dict[str, Any]) -> None:
        error = page.get("error", "?")
        self.errors.append(error)
        if error == "OFFSET_OUT_OF_RANGE":
            self.violations.append(f"position {self.position} out of range: {page.get('message')}")
        time.sleep(RETRY_BACKOFF_S)

    def _check_page(self, page: dict[str, Any]) -> None:
        records = [(r["offset"], r["value"]["data"]) for r in page["data"]]
        expected = list(range(self.position, self.position + len(records)))
        if [offset for offset, _ in records] != expected:
            self.violations.append(f"from {self.position} got offsets {[o for o, _ in records]}")
        beyond = [offset for offset, _ in records if offset >= page["high_watermark"]]
        if beyond:
            self.violations.append(f"offsets {beyond} at or above the page's HW {page['high_watermark']}")
        if page["next_offset"] < self.position:
            self.violations.append(f"position went back from {self.position} to {page['next_offset']}")
        self.seen += records
        self.position = max(self.position, page["next_offset"])


@dataclass
class LatestOffsetWatcher(_Background):
    """Polls ``…/partitions/{p}/offset`` of ``partitions`` through random live brokers."""

    cluster: Cluster
    topic: str
    partitions: tuple[int, ...]
    seed: int = 3
    highest: dict[int, int] = field(default_factory=dict)
    answers: int = 0
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def _run(self) -> None:
        rng = random.Random(self.seed)
        while not self._stop.is_set():
            partition = rng.choice(self.partitions)
            via = _live_broker(self.cluster, rng)
            if via is None:
                self._stop.wait(RETRY_BACKOFF_S)
                continue
            try:
                status, body = self.cluster.v3("GET", f"/topics/{self.topic}/partitions/{partition}/offset", via=via)
            except TRANSIENT_ERRORS as error:
                self.errors.append(type(error).__name__)
                time.sleep(RETRY_BACKOFF_S)
                continue
            if status != 200:
                self.errors.append(body.get("error", str(status)))
                time.sleep(RETRY_BACKOFF_S)
                continue
            self.answers += 1
            latest, before = body["latest_offset"], self.highest.get(partition, 0)
            if latest < before:
                self.violations.append(
                    f"{self.topic}-{partition}: latest_offset {latest} from broker {via} after {before}"
                )
            self.highest[partition] = max(before, latest)


def kill_leader_under_load(
    cluster: Cluster, producer: BackgroundProducer, previous: Description, brokers: set[int]
) -> tuple[Description, float]:
    """One round of leader failover under load: SIGKILL the leader, wait until an acks=all produce
    sent after the kill succeeds, check the election, restart the old leader and wait for the full ISR.

    Returns the new partition state and the unavailability window: from the SIGKILL until that
    first successful produce ended.
    """
    leader = previous["leader_id"]
    wait_until(lambda: len(producer.acknowledged) >= 20, "acknowledged writes before the kill", 10)
    cluster.brokers[leader].kill()
    killed_at = time.monotonic()
    resumed = wait_until(lambda: producer.first_success_started_after(killed_at), "acks=all after the kill")
    elected = wait_for_leader(cluster, producer.topic, excluding=leader)
    assert elected["leader_epoch"] > previous["leader_epoch"], (previous, elected)
    assert elected["leader_id"] in previous["isr"], "a clean election picks an ISR member"
    cluster.brokers[leader].start()
    return wait_for_isr(cluster, producer.topic, brokers, timeout_s=15), resumed.ended_s - killed_at
