"""Helpers for the multi-broker integration tests (``test_cluster_*.py``).

A ``LiveCluster`` is a ``BrokerCluster`` of real ``highwater serve`` processes plus the
few questions the tests ask it over the public REST API: who is the controller, who
leads what, which brokers are registered. Every wait is a poll with a deadline that
fails with what was last seen, so a timeout explains itself.

The ``metadata_store`` fixture is parametrized over both stores: a fresh sqlite file,
or a fresh real etcd process (``tests.support.etcd.EtcdServer``).

Brokers run with a short session (``SESSION_TIMEOUT_MS``, 2000 ms) so failures are
detected in about two seconds. ``HWTEST_FIGURES_SESSION_TIMEOUT_MS=6000
HWTEST_FIGURES_HEARTBEAT_INTERVAL_MS=1000`` runs the same tests with the default
session, for figures comparable with Kafka's defaults.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.brokers import BrokerCluster, BrokerProcess, http_json
from tests.support.etcd import EtcdServer

T = TypeVar("T")

SESSION_TIMEOUT_MS = int(os.environ.get("HWTEST_FIGURES_SESSION_TIMEOUT_MS", "2000"))
HEARTBEAT_INTERVAL_MS = int(os.environ.get("HWTEST_FIGURES_HEARTBEAT_INTERVAL_MS", "300"))
DETECTION_MARGIN_MS = 1500
"""Allowed beyond the session timeout for lease expiry detection, election and the
metadata reaching the broker that is asked (store polling, watches, one HTTP poll)."""
POLL_INTERVAL_S = 0.01


def session_env(
    session_timeout_ms: int = SESSION_TIMEOUT_MS, heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS, **extra: str
) -> dict[str, str]:
    """Broker environment for a session of ``session_timeout_ms`` (plus extra settings).

    The controller's periodic preferred-leader rebalance is off unless ``extra`` turns it
    on: a test that restarts a broker and then produces would otherwise race a leadership
    move it did not ask for (its produce answered NOT_LEADER_OR_FOLLOWER mid-request).
    """
    return {
        "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": str(session_timeout_ms),
        "HIGHWATER_BROKER_HEARTBEAT_INTERVAL_MS": str(heartbeat_interval_ms),
        "HIGHWATER_AUTO_LEADER_REBALANCE_ENABLE": "false",
        **extra,
    }


@pytest.fixture(params=["sqlite", "etcd"])
def metadata_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A metadata store URL: a fresh sqlite file or a fresh real etcd server."""
    if request.param == "sqlite":
        yield f"sqlite://{(tmp_path / 'metadata.db').resolve()}"
        return
    server = EtcdServer(tmp_path / "etcd")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def wait_until(probe: Callable[[], T], timeout_s: float, what: str, interval_s: float = POLL_INTERVAL_S) -> T:
    """Call ``probe`` until it returns something truthy; fail naming ``what`` and the last answer."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while True:
        try:
            last = probe()
        except (OSError, KeyError) as error:
            last = error
        if last and not isinstance(last, Exception):
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.1f} s waiting for {what}; last seen: {last!r}")
        time.sleep(interval_s)


@dataclass(frozen=True)
class PartitionState:
    partition: int
    leader_id: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    high_watermark: int
    replica_log_end_offsets: dict[int, int]
    """Each replica's log end offset as its leader last saw it (-1: unknown)."""


class LiveCluster:
    """A started ``BrokerCluster`` and the REST questions the tests ask it."""

    def __init__(self, root: Path, count: int, metadata_store: str, env: dict[str, str]) -> None:
        self.cluster = BrokerCluster(root, count, metadata_store=metadata_store)
        for broker in self.cluster.brokers.values():
            broker.env.update(env)
        self.cluster.start()
        self.cluster_id = self.cluster.cluster_id()

    @property
    def brokers(self) -> dict[int, BrokerProcess]:
        return self.cluster.brokers

    def live_ids(self) -> set[int]:
        return {broker_id for broker_id, broker in self.brokers.items() if broker.alive}

    def broker_headers(self, node_id: int) -> dict[str, str]:
        return self.cluster.broker_headers(node_id)

    def url(self, via: int | None = None) -> str:
        return self.brokers[via].url if via is not None else self.cluster.any_url()

    def base(self, via: int | None = None) -> str:
        return f"{self.url(via)}/v3/clusters/{self.cluster_id}"

    def controller_id(self, via: int | None = None) -> int:
        status, body = http_json("GET", f"{self.url(via)}/v3/clusters", timeout_s=2)
        assert status == 200, body
        return body["data"][0]["controller_id"]

    def registered_ids(self, via: int | None = None) -> set[int]:
        status, body = http_json("GET", f"{self.base(via)}/brokers", timeout_s=2)
        assert status == 200, body
        return {broker["broker_id"] for broker in body["data"]}

    def partitions(self, topic: str, via: int | None = None) -> dict[int, PartitionState]:
        status, body = http_json("GET", f"{self.base(via)}/topics/{topic}/partitions", timeout_s=5)
        assert status == 200, body
        return {
            p["partition_id"]: PartitionState(
                p["partition_id"],
                p["leader_id"],
                p["leader_epoch"],
                p["replica_ids"],
                p["isr"],
                p["high_watermark"],
                {r["broker_id"]: r["log_end_offset"] for r in p.get("replicas_state") or []},
            )
            for p in body["data"]
        }

    def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        via: int | None = None,
        configs: dict[str, str] | None = None,
    ) -> None:
        body = {
            "topic_name": name,
            "partitions_count": partitions,
            "replication_factor": replication_factor,
            "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
        }

        def created() -> dict | None:
            status, reply = http_json("POST", f"{self.base(via)}/topics", body)
            if (
                status == 400
                and reply.get("error") == "INVALID_REPLICATION_FACTOR"
                and replication_factor <= len(self.live_ids())
            ):
                return None  # the controller has not seen every broker that just started yet
            assert status == 201, reply
            return reply

        wait_until(created, 5, f"topic {name} to be created", interval_s=0.1)

        def known_everywhere() -> bool:
            """Every answering broker lists each partition with a leader: a request any of them serves next
            (a commit on a coordinator, a read) finds the partition. A paused broker, which cannot answer, is
            left out so a test can create a topic while it holds one."""
            for broker_id in self.live_ids():
                try:
                    status, body = http_json("GET", f"{self.base(broker_id)}/topics/{name}/partitions", timeout_s=1)
                except OSError:
                    continue
                led = [p for p in body.get("data", []) if p["leader_id"] >= 0] if status == 200 else []
                if len(led) != partitions:
                    return False
            return True

        wait_until(known_everywhere, 10, f"every live broker to know topic {name}'s partitions", interval_s=0.05)

    def produce(
        self, topic: str, partition: int, values: list[str], via: int | None = None, acks: str = "all"
    ) -> tuple[int, dict]:
        entries = [{"partition_id": partition, "value": {"type": "STRING", "data": v}} for v in values]
        return http_json("POST", f"{self.base(via)}/topics/{topic}/records:batch?acks={acks}", {"entries": entries})

    def read_values(self, topic: str, partition: int, via: int | None = None) -> list[str]:
        url = f"{self.base(via)}/topics/{topic}/partitions/{partition}/records?offset=0&format=string&max_records=1000"
        status, body = http_json("GET", url)
        assert status == 200, body
        return [record["value"]["data"] for record in body["data"]]

    def wait_for_values(
        self, topic: str, partition: int, expected: list[str], via: int | None = None, timeout_s: float = 5.0
    ) -> None:
        """Wait until reading ``topic-partition`` from offset 0 gives exactly ``expected``
        (a new leader's high watermark catches up once its followers fetch, as in Kafka)."""
        deadline = time.monotonic() + timeout_s
        while (values := self.read_values(topic, partition, via)) != expected:
            if time.monotonic() > deadline:
                state = http_json("GET", f"{self.base(via)}/topics/{topic}/partitions/{partition}")[1]
                raise AssertionError(f"{topic}-{partition} reads {values}, expected {expected}; state {state}")
            time.sleep(POLL_INTERVAL_S)

    def led_by(self, topic: str, broker_id: int, via: int | None = None) -> dict[int, PartitionState]:
        return {p: s for p, s in self.partitions(topic, via).items() if s.leader_id == broker_id}

    def wait_in_every_isr(self, topic: str, broker_id: int, timeout_s: float = 20.0) -> dict[int, PartitionState]:
        """Wait until ``broker_id`` is in the ISR of every partition it replicates."""

        def rejoined() -> dict[int, PartitionState] | None:
            states = self.partitions(topic)
            missing = [p for p, s in states.items() if broker_id in s.replicas and broker_id not in s.isr]
            return None if missing else states

        return wait_until(rejoined, timeout_s, f"broker {broker_id} back in every ISR of {topic}")

    def restart(self, broker_id: int) -> None:
        """Start a stopped or killed broker again and wait until the others see it registered."""
        self.brokers[broker_id].start()
        others = self.live_ids() - {broker_id}
        for other in others:
            wait_until(partial(self._sees, other, broker_id), 15, f"broker {other} to see {broker_id}")

    def _sees(self, via: int, broker_id: int) -> bool:
        return broker_id in self.registered_ids(via)

    def shutdown(self) -> None:
        self.cluster.shutdown()


@pytest.fixture
def live_cluster_factory(tmp_path: Path) -> Iterator[Callable[..., LiveCluster]]:
    """``make(metadata_store, count=3, env=None)``: start a cluster (``env`` None: the short
    session of ``session_env()``; ``{}``: the brokers' defaults); all are shut down after."""
    started: list[LiveCluster] = []

    def make(metadata_store: str, count: int = 3, env: dict[str, str] | None = None) -> LiveCluster:
        chosen_env = session_env() if env is None else env
        cluster = LiveCluster(tmp_path / f"cluster-{len(started)}", count, metadata_store, chosen_env)
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.shutdown()


def report_figure(name: str, samples_ms: list[float], store: str, session_timeout_ms: int) -> float:
    """Print one measured figure (median and the samples) and return the median in ms."""
    median_ms = statistics.median(samples_ms)
    samples = ", ".join(f"{sample:.0f}" for sample in samples_ms)
    print(
        f"\nFIGURE {name} store={store.split(':')[0]} session_timeout_ms={session_timeout_ms} "
        f"median_ms={median_ms:.0f} runs={len(samples_ms)} samples_ms=[{samples}]"
    )
    return median_ms
