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
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from tests.support.replication import REQUEST_ERRORS, ReplicatedTopic


@dataclass(frozen=True)
class Acknowledgement:
    offset: int
    value: str
    started_s: float
    ended_s: float


def _live_broker(topic: ReplicatedTopic, rng: random.Random) -> int | None:
    live = [broker_id for broker_id, broker in topic.cluster.brokers.items() if broker.alive]
    return rng.choice(live) if live else None


@dataclass
class BackgroundProducer:
    topic: ReplicatedTopic
    acks: str = "all"
    timeout_ms: int = 3000
    seed: int = 1
    acknowledged: list[Acknowledgement] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> BackgroundProducer:
        self._thread = threading.Thread(target=self._run, name="background-producer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(30)

    def _run(self) -> None:
        rng = random.Random(self.seed)
        sequence = 0
        while not self._stop.is_set():
            value = f"p-{sequence}"
            sequence += 1
            via = _live_broker(self.topic, rng)
            started_s = time.monotonic()
            try:
                status, reply = self.topic.produce(value, self.acks, self.timeout_ms, via=via)
            except REQUEST_ERRORS as error:
                self.errors.append(type(error).__name__)
                time.sleep(0.02)
                continue
            if status == 200:
                self.acknowledged.append(Acknowledgement(reply["offset"], value, started_s, time.monotonic()))
            else:
                self.errors.append(reply.get("error", str(status)))
                time.sleep(0.02)

    def first_success_started_after(self, moment_s: float) -> Acknowledgement | None:
        return next((a for a in list(self.acknowledged) if a.started_s >= moment_s), None)


@dataclass
class BackgroundConsumer:
    """Reads everything from offset 0; ``violations`` lists every page a reader must never get."""

    topic: ReplicatedTopic
    seed: int = 2
    position: int = 0
    seen: list[tuple[int, str]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> BackgroundConsumer:
        self._thread = threading.Thread(target=self._run, name="background-consumer", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(30)

    def _run(self) -> None:
        rng = random.Random(self.seed)
        while not self._stop.is_set():
            try:
                status, page = self.topic.fetch_page(self.position, _live_broker(self.topic, rng), timeout_ms=200)
            except REQUEST_ERRORS as error:
                self.errors.append(type(error).__name__)
                time.sleep(0.02)
                continue
            if status != 200:
                self._on_error(page)
                continue
            self._check_page(page)

    def _on_error(self, page: dict) -> None:
        error = page.get("error", "?")
        self.errors.append(error)
        if error == "OFFSET_OUT_OF_RANGE":
            self.violations.append(f"position {self.position} out of range: {page.get('message')}")
        time.sleep(0.02)

    def _check_page(self, page: dict) -> None:
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
