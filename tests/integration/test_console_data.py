"""The console's data against a real 3-broker cluster: rates, lag over time, ISR events, replica offsets.

Brokers sample every 200 ms (``HIGHWATER_CONSOLE_*``), so every wait below is a poll
with a deadline for the next samples, never a sleep. The follower pause uses a lag
time of 4 s and a session of 8 s: the leader removes the paused follower itself
(``shrink`` after the lag time), and there is time to see the high watermark held at
the paused follower's log end offset before that.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.brokers import BrokerCluster, http_json
from tests.support.replication import ReplicatedTopic, start_cluster, wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
CONSOLE_ENV = {
    "HIGHWATER_CONSOLE_LAG_SAMPLE_INTERVAL_MS": "200",
    "HIGHWATER_CONSOLE_ACTIVITY_SAMPLE_INTERVAL_MS": "200",
    "HIGHWATER_REPLICA_LAG_TIME_MAX_MS": "4000",
    "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": "8000",
    "HIGHWATER_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
}


@pytest.fixture
def console_cluster(tmp_path: Path) -> Iterator[BrokerCluster]:
    started = start_cluster(tmp_path, env=CONSOLE_ENV)
    yield started
    started.shutdown()


def get(url: str) -> dict[str, Any]:
    status, body = http_json("GET", url, timeout_s=10)
    assert status == 200, body
    return body


def base(cluster: BrokerCluster, broker_id: int | None = None) -> str:
    url = cluster.brokers[broker_id].url if broker_id is not None else cluster.any_url()
    return f"{url}/v3/clusters/{cluster.cluster_id()}"


def commit(cluster: BrokerCluster, group: str, topic: str, offset: int) -> None:
    body = {"offsets": [{"topic_name": topic, "partition_id": 0, "offset": offset}]}
    status, reply = http_json("POST", f"{base(cluster)}/consumer-groups/{group}/offsets", body)
    assert status == 200, reply


def lag_totals(cluster: BrokerCluster, group: str) -> list[int]:
    return [sample["total_lag"] for sample in get(f"{base(cluster)}/consumer-groups/{group}/lag-history")["samples"]]


def produce(topic: ReplicatedTopic, count: int, label: str, via: int | None = None) -> None:
    for i in range(count):
        status, reply = topic.produce(f"{label}-{i}", acks="1", via=via)
        assert status == 200, reply


def test_rates_and_lag_history_follow_production_and_commits(console_cluster: BrokerCluster) -> None:
    cluster = console_cluster
    topic = ReplicatedTopic(cluster, name="traffic")
    topic.create()
    commit(cluster, "watchers", "traffic", 0)
    produced = 0

    def rate() -> dict | None:
        """The rate is the last sample's: keep producing until a sample has seen some."""
        nonlocal produced
        produce(topic, 1, f"first-{produced}")
        produced += 1
        body = get(f"{base(cluster)}/activity")
        (entry,) = [t for t in body["topics"] if t["topic_name"] == "traffic"]
        return body if entry["produce_records_per_s"] > 0 else None

    activity = wait_until(rate, 10, "a produce rate above 0 for the topic")
    assert {b["broker_id"] for b in activity["brokers"] if b["reachable"]} == ALL_BROKERS
    (entry,) = [t for t in activity["topics"] if t["topic_name"] == "traffic"]
    assert entry["produce_bytes_per_s"] > 0
    assert any(point["produce_records_per_s"] > 0 for point in entry["history"])
    assert (activity["under_replicated_partitions"], activity["offline_partitions"]) == (0, 0)

    wait_until(lambda: lag_totals(cluster, "watchers")[-1:] == [produced], 10, f"a lag sample of {produced}")
    produce(topic, 20, "second")
    total = produced + 20
    wait_until(lambda: lag_totals(cluster, "watchers")[-1:] == [total], 10, f"a lag sample of {total}")
    rising = lag_totals(cluster, "watchers")
    assert rising == sorted(rising), f"lag fell while only producing: {rising}"
    assert rising[0] < total

    commit(cluster, "watchers", "traffic", total)
    wait_until(lambda: lag_totals(cluster, "watchers")[-1:] == [0], 10, "a lag sample of 0 after the commit")
    history = get(f"{base(cluster)}/consumer-groups/watchers/lag-history")
    assert (history["interval_ms"], history["capacity"]) == (200, 720)
    totals = [sample["total_lag"] for sample in history["samples"]]
    assert max(totals) == total and totals[-1] == 0
    lagging = [s for s in history["samples"] if s["total_lag"] == total][-1]
    (partition,) = lagging["partitions"]
    assert (partition["committed_offset"], partition["high_watermark"], partition["lag"]) == (0, total, total)
    assert partition["lag_ms"] >= 0 and lagging["max_lag_ms"] == partition["lag_ms"]
    assert history["samples"][-1]["max_lag_ms"] == 0


def offsets_of(cluster: BrokerCluster, via: int, topic: str) -> dict[str, Any]:
    (partition,) = get(f"{base(cluster, via)}/topics/{topic}/replica-offsets")["partitions"]
    return partition


def leos(partition: dict[str, Any]) -> dict[int, int]:
    return {replica["broker_id"]: replica["log_end_offset"] for replica in partition["replicas"]}


def events(cluster: BrokerCluster, via: int, topic: str) -> list[dict[str, Any]]:
    return get(f"{base(cluster, via)}/topics/{topic}/isr-events")["events"]


def test_a_paused_follower_falls_behind_holds_the_hw_shrinks_and_expands(console_cluster: BrokerCluster) -> None:
    cluster = console_cluster
    topic = ReplicatedTopic(cluster, name="paused")
    leader = topic.create()["leader_id"]
    follower = min(ALL_BROKERS - {leader})
    topic.produce_ok("warm-up")
    assert events(cluster, leader, "paused") == []

    cluster.brokers[follower].pause()
    try:
        produce(topic, 5, "while-paused", via=leader)

        def held_back() -> dict | None:
            partition = offsets_of(cluster, leader, "paused")
            ends = leos(partition)
            return partition if follower in partition["isr"] and ends[leader] > ends[follower] else None

        held = wait_until(held_back, 5, "the paused follower's LEO behind the leader's while still in the ISR")
        assert held["reachable"] is True
        assert held["high_watermark"] == leos(held)[follower] < leos(held)[leader]

        def shrunk() -> list | None:
            return [
                e
                for e in events(cluster, leader, "paused")
                if e["kind"] == "shrink" and follower in e["previous_isr"] and follower not in e["isr"]
            ]

        (shrink,) = wait_until(shrunk, 15, "a shrink event naming the paused follower")
        assert shrink["leader_id"] == leader and shrink["partition_id"] == 0

        def released() -> dict | None:
            partition = offsets_of(cluster, leader, "paused")
            return partition if partition["high_watermark"] == leos(partition)[leader] else None

        after = wait_until(released, 5, "the HW to pass the paused follower once it left the ISR")
        assert leos(after)[follower] < after["high_watermark"]
        assert not next(r for r in after["replicas"] if r["broker_id"] == follower)["in_sync"]

        activity = get(f"{base(cluster, leader)}/activity")
        assert [b["reachable"] for b in activity["brokers"] if b["broker_id"] == follower] in ([False], [])
        assert activity["under_replicated_partitions"] >= 1
    finally:
        cluster.brokers[follower].resume()

    def expanded() -> list | None:
        return [e for e in events(cluster, leader, "paused") if e["kind"] == "expand" and follower in e["isr"]]

    wait_until(expanded, 20, "an expand event naming the resumed follower")

    def caught_up() -> dict | None:
        partition = offsets_of(cluster, leader, "paused")
        ends = set(leos(partition).values())
        return partition if ends == {partition["high_watermark"]} else None

    wait_until(caught_up, 10, "every replica's LEO back at the HW")

    def same_everywhere() -> list | None:
        seen = [[(e["kind"], e["isr"], e["previous_isr"]) for e in events(cluster, b, "paused")] for b in ALL_BROKERS]
        return seen[0] if seen[0] and all(s == seen[0] for s in seen) else None

    kinds = [kind for kind, _, _ in wait_until(same_everywhere, 10, "every broker listing the same events")]
    assert kinds.index("expand") < kinds.index("shrink"), "events are listed newest first"
