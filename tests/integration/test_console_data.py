"""The console's data against a real 3-broker cluster: rates, lag over time, ISR events, replica offsets.

Brokers sample every 200 ms (``console.*_sample_interval_ms``), so every wait below is
a poll with a deadline for the next samples, never a sleep. The follower pause uses a
lag time of 4 s and a session of 8 s: the leader removes the paused follower itself
(``shrink`` after the lag time), and there is time to see the high watermark held at
the paused follower's log end offset before that.

The test that breaks no broker has the module's cluster; each test that pauses a
broker, and the one with authentication on, has a cluster of its own.

With authentication on, each route is asked of every broker (two of three forward a
group's request to its coordinator, and activity fans out to the others with broker
credentials) as a viewer who may DESCRIBE one topic of two.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from broker.storage.log_manager import partition_directory_name
from broker.storage.segment import LOG_SUFFIX
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
CONSOLE_SETTINGS = {
    "console.lag_sample_interval_ms": 200,
    "console.activity_sample_interval_ms": 200,
    "replica_lag_time_max_ms": 4000,
    "broker_session_timeout_ms": 8000,
    "offsets_topic_num_partitions": 1,
}
SPEC = ClusterSpec(settings=CONSOLE_SETTINGS)
cluster = cluster_fixture(SPEC, scope="module")
own_cluster = cluster_fixture(SPEC)
"""A cluster for one test that pauses a broker."""
secured_cluster = cluster_fixture(ClusterSpec(settings=CONSOLE_SETTINGS, security=True))
"""Basic authentication with the harness's admin created offline, as the README says; the viewer is added through the API."""


def get(cluster: Cluster, path: str, via: int | None = None) -> dict[str, Any]:
    """``path`` under the cluster's ``/v3/clusters/<id>``; it must answer 200."""
    status, body = cluster.v3("GET", path, via=via)
    assert status == 200, body
    answer: dict[str, Any] = body
    return answer


def create_topic(cluster: Cluster, name: str) -> int:
    """One partition on every broker with a min ISR of 2; its leader."""
    return cluster.create_topic(name, configs={"min.insync.replicas": 2})[0].leader_id


def commit(cluster: Cluster, group: str, topic: str, offset: int) -> None:
    body = {"offsets": [{"topic_name": topic, "partition_id": 0, "offset": offset}]}
    status, reply = cluster.v3("POST", f"/consumer-groups/{group}/offsets", body)
    assert status == 200, reply


def lag_totals(cluster: Cluster, group: str) -> list[int]:
    return [sample["total_lag"] for sample in get(cluster, f"/consumer-groups/{group}/lag-history")["samples"]]


def produce(cluster: Cluster, topic: str, count: int, label: str, acks: str = "1", via: int | None = None) -> None:
    """``count`` records, one request each."""
    for i in range(count):
        record = {"partition_id": 0, "value": {"type": "STRING", "data": f"{label}-{i}"}}
        status, reply = cluster.v3("POST", f"/topics/{topic}/records?acks={acks}", record, via=via)
        assert status == 200, reply


def segment_bytes_on_disk(cluster: Cluster, broker_id: int, topic: str, partition: int) -> int:
    directory = cluster.brokers[broker_id].data_dir / partition_directory_name(topic, partition)
    return sum(path.stat().st_size for path in directory.glob(f"*{LOG_SUFFIX}"))


def leader_size(cluster: Cluster, topic: str) -> tuple[int, int]:
    """The one partition's leader and its ``size_bytes``, asked of a broker that does not lead it."""
    leader = get(cluster, f"/topics/{topic}/partitions/0")["leader_id"]
    (partition,) = get(cluster, f"/topics/{topic}/replica-offsets", via=min(ALL_BROKERS - {leader}))["partitions"]
    assert partition["leader_id"] == leader
    return leader, partition["size_bytes"]


def test_rates_and_lag_history_follow_production_and_commits(cluster: Cluster, prefix: str) -> None:
    topic, group = f"{prefix}-traffic", f"{prefix}-watchers"
    create_topic(cluster, topic)
    assert leader_size(cluster, topic)[1] == 0
    commit(cluster, group, topic, 0)
    produced = 0

    def rate() -> dict[str, Any] | None:
        """The rate is the last sample's: keep producing until a sample has seen some."""
        nonlocal produced
        produce(cluster, topic, 1, f"first-{produced}")
        produced += 1
        body = get(cluster, "/activity")
        (entry,) = [t for t in body["topics"] if t["topic_name"] == topic]
        return body if entry["produce_records_per_s"] > 0 else None

    activity = cluster.wait_until(rate, "a produce rate above 0 for the topic", 10)
    assert {b["broker_id"] for b in activity["brokers"] if b["reachable"]} == ALL_BROKERS
    (entry,) = [t for t in activity["topics"] if t["topic_name"] == topic]
    assert entry["produce_bytes_per_s"] > 0
    assert any(point["produce_records_per_s"] > 0 for point in entry["history"])
    assert (activity["under_replicated_partitions"], activity["offline_partitions"]) == (0, 0)

    cluster.wait_until(lambda: lag_totals(cluster, group)[-1:] == [produced], f"a lag sample of {produced}", 10)
    leader, size = leader_size(cluster, topic)
    assert size == segment_bytes_on_disk(cluster, leader, topic, 0) > 0
    produce(cluster, topic, 20, "second")
    total = produced + 20
    leader, grown = leader_size(cluster, topic)
    assert grown == segment_bytes_on_disk(cluster, leader, topic, 0) > size
    cluster.wait_until(lambda: lag_totals(cluster, group)[-1:] == [total], f"a lag sample of {total}", 10)
    assert_no_fetch_traffic(cluster, topic)
    rising = lag_totals(cluster, group)
    assert rising == sorted(rising), f"lag fell while only producing: {rising}"
    assert rising[0] < total

    commit(cluster, group, topic, total)
    cluster.wait_until(lambda: lag_totals(cluster, group)[-1:] == [0], "a lag sample of 0 after the commit", 10)
    history = get(cluster, f"/consumer-groups/{group}/lag-history")
    assert (history["interval_ms"], history["capacity"]) == (200, 720)
    totals = [sample["total_lag"] for sample in history["samples"]]
    assert max(totals) == total and totals[-1] == 0
    lagging = [s for s in history["samples"] if s["total_lag"] == total][-1]
    (partition,) = lagging["partitions"]
    assert (partition["committed_offset"], partition["high_watermark"], partition["lag"]) == (0, total, total)
    assert partition["lag_ms"] >= 0 and lagging["max_lag_ms"] == partition["lag_ms"]
    assert history["samples"][-1]["max_lag_ms"] == 0
    assert_a_forwarded_read_counts_once_where_it_entered(cluster, topic, leader)


def fetch_rates(activity: dict[str, Any]) -> dict[int, float]:
    return {b["broker_id"]: b["fetch_records_per_s"] for b in activity["brokers"]}


def assert_no_fetch_traffic(cluster: Cluster, topic: str) -> None:
    """The group lags and its coordinator reads a record every sample to date the lag (its
    ``lag_ms``): that is no consumer's fetch, on the leader or anywhere else."""
    activity = get(cluster, "/activity")
    (entry,) = [t for t in activity["topics"] if t["topic_name"] == topic]
    assert len(entry["history"]) > 1
    assert [p["fetch_records_per_s"] for p in entry["history"] if p["fetch_records_per_s"]] == []
    assert set(fetch_rates(activity).values()) == {0}


def assert_a_forwarded_read_counts_once_where_it_entered(cluster: Cluster, topic: str, leader: int) -> None:
    """A consumer reading through a broker that does not lead: that broker counts the read,
    the leader serving the forwarded read does not count it again."""
    entry = min(ALL_BROKERS - {leader})

    def counted() -> dict[int, float] | None:
        assert cluster.read(topic, via=entry), "the read through a broker that does not lead returns records"
        rates = fetch_rates(get(cluster, "/activity"))
        assert {b: r for b, r in rates.items() if b != entry} == {b: 0 for b in ALL_BROKERS - {entry}}, rates
        return rates if rates[entry] > 0 else None

    cluster.wait_until(counted, f"a fetch rate on broker {entry}, where the reads enter", 10)


def offsets_of(cluster: Cluster, via: int, topic: str) -> dict[str, Any]:
    (partition,) = get(cluster, f"/topics/{topic}/replica-offsets", via=via)["partitions"]
    answer: dict[str, Any] = partition
    return answer


def leos(partition: dict[str, Any]) -> dict[int, int]:
    return {replica["broker_id"]: replica["log_end_offset"] for replica in partition["replicas"]}


def events(cluster: Cluster, via: int, topic: str) -> list[dict[str, Any]]:
    answer: list[dict[str, Any]] = get(cluster, f"/topics/{topic}/isr-events", via=via)["events"]
    return answer


def test_a_paused_follower_falls_behind_holds_the_hw_shrinks_and_expands(own_cluster: Cluster) -> None:
    cluster = own_cluster
    leader = create_topic(cluster, "paused")
    controller = cluster.controller_id()
    # Never the controller: paused, it could not take the shrink in until a new one is elected.
    follower = min(ALL_BROKERS - {leader, controller})
    produce(cluster, "paused", 1, "warm-up", acks="all")
    assert events(cluster, leader, "paused") == []

    cluster.brokers[follower].pause()
    try:
        # One request, so the first look comes well within the lag time that ends the hold.
        values = [f"while-paused-{i}" for i in range(5)]
        status, reply = cluster.produce("paused", values, acks="1", via=leader)
        assert status in (200, 207) and not reply["failures"], reply

        def held_back() -> dict[str, Any] | None:
            partition = offsets_of(cluster, leader, "paused")
            ends = leos(partition)
            return partition if follower in partition["isr"] and ends[leader] > ends[follower] else None

        held = cluster.wait_until(held_back, "the paused follower's LEO behind the leader's while still in the ISR", 5)
        assert held["reachable"] is True
        assert held["high_watermark"] == leos(held)[follower] < leos(held)[leader]

        def shrunk() -> list[dict[str, Any]]:
            return [
                e
                for e in events(cluster, leader, "paused")
                if e["kind"] == "shrink" and follower in e["previous_isr"] and follower not in e["isr"]
            ]

        (shrink,) = cluster.wait_until(shrunk, "a shrink event naming the paused follower", 15)
        assert shrink["leader_id"] == leader and shrink["partition_id"] == 0

        def released() -> dict[str, Any] | None:
            partition = offsets_of(cluster, leader, "paused")
            return partition if partition["high_watermark"] == leos(partition)[leader] else None

        after = cluster.wait_until(released, "the HW to pass the paused follower once it left the ISR", 5)
        assert leos(after)[follower] < after["high_watermark"]
        assert not next(r for r in after["replicas"] if r["broker_id"] == follower)["in_sync"]

        activity = get(cluster, "/activity", via=leader)
        assert [b["reachable"] for b in activity["brokers"] if b["broker_id"] == follower] in ([False], [])
        assert activity["under_replicated_partitions"] >= 1
    finally:
        cluster.brokers[follower].resume()

    def expanded() -> list[dict[str, Any]]:
        return [e for e in events(cluster, leader, "paused") if e["kind"] == "expand" and follower in e["isr"]]

    cluster.wait_until(expanded, "an expand event naming the resumed follower", 20)

    def caught_up() -> dict[str, Any] | None:
        partition = offsets_of(cluster, leader, "paused")
        ends = set(leos(partition).values())
        return partition if ends == {partition["high_watermark"]} else None

    cluster.wait_until(caught_up, "every replica's LEO back at the HW", 10)

    def same_everywhere() -> list[tuple[str, list[int], list[int]]] | None:
        seen = [[(e["kind"], e["isr"], e["previous_isr"]) for e in events(cluster, b, "paused")] for b in ALL_BROKERS]
        return seen[0] if seen[0] and all(s == seen[0] for s in seen) else None

    kinds = [kind for kind, _, _ in cluster.wait_until(same_everywhere, "every broker listing the same events", 10)]
    assert kinds.index("expand") < kinds.index("shrink"), "events are listed newest first"


def test_a_partition_whose_leader_is_paused_is_reported_unreachable_not_failed(own_cluster: Cluster) -> None:
    cluster = own_cluster
    create_topic(cluster, "spread")
    leaders = {state.leader_id for state in cluster.create_topic("three", 3).values()}
    paused = 3
    assert paused in leaders, leaders
    cluster.brokers[paused].pause()
    try:
        partitions = get(cluster, "/topics/three/replica-offsets", via=1)["partitions"]
    finally:
        cluster.brokers[paused].resume()
    assert [p["partition_id"] for p in partitions] == [0, 1, 2]
    for partition in partitions:
        if partition["leader_id"] == paused:
            assert partition["reachable"] is False
            assert (partition["high_watermark"], partition["log_start_offset"]) == (None, None)
            assert {r["log_end_offset"] for r in partition["replicas"]} == {None}
        else:
            assert partition["reachable"] is True
            assert partition["high_watermark"] == 0
    assert any(not p["reachable"] for p in partitions), "the paused broker's leadership moved before the request"


VIEWER_PASSWORD = "viewer-pw"
VIEWER = {"Authorization": aiohttp.encode_basic_auth("viewer", VIEWER_PASSWORD)}


def as_admin(cluster: Cluster, method: str, path: str, body: dict[str, Any], expected: int = 200) -> None:
    status, reply = cluster.v3(method, path, body)
    assert status == expected, reply


def as_viewer(cluster: Cluster, broker_id: int, path: str) -> tuple[int, Any]:
    return cluster.v3("GET", path, via=broker_id, headers=VIEWER)


def test_each_route_answers_only_what_the_viewer_may_describe_on_every_broker(secured_cluster: Cluster) -> None:
    cluster = secured_cluster
    as_admin(cluster, "POST", "/users", {"name": "viewer", "password": VIEWER_PASSWORD}, 201)
    for resource_type, name in (("CLUSTER", "kafka-cluster"), ("GROUP", "watchers"), ("TOPIC", "shown")):
        acl = {
            "resource_type": resource_type,
            "resource_name": name,
            "pattern_type": "LITERAL",
            "principal": "User:viewer",
            "operation": "DESCRIBE",
            "permission": "ALLOW",
        }
        as_admin(cluster, "POST", "/acls", acl, 201)
    for topic in ("shown", "hidden"):
        cluster.create_topic(topic)
        for value in range(4):
            as_admin(cluster, "POST", f"/topics/{topic}/records", {"value": {"data": value}})
    offsets = [{"topic_name": topic, "partition_id": 0, "offset": 1} for topic in ("shown", "hidden")]
    as_admin(cluster, "POST", "/consumer-groups/watchers/offsets", {"offsets": offsets})

    for broker_id in ALL_BROKERS:

        def sampled(b: int = broker_id) -> dict[str, Any] | None:
            status, body = as_viewer(cluster, b, "/consumer-groups/watchers/lag-history")
            assert status == 200, body
            last: dict[str, Any] | None = body["samples"][-1] if body["samples"] else None
            return last if last is not None and last["total_lag"] == 3 else None

        sample = cluster.wait_until(sampled, f"a lag sample through broker {broker_id}", 10)
        assert [p["topic_name"] for p in sample["partitions"]] == ["shown"]

        status, body = as_viewer(cluster, broker_id, "/activity")
        assert status == 200, body
        assert [t["topic_name"] for t in body["topics"]] == ["shown"]
        assert {b["broker_id"] for b in body["brokers"] if b["reachable"]} == ALL_BROKERS

        status, body = as_viewer(cluster, broker_id, "/replica-offsets")
        assert status == 200, body
        assert [t["topic_name"] for t in body["topics"]] == ["shown"]
        (partition,) = body["topics"][0]["partitions"]
        assert partition["reachable"] is True and partition["high_watermark"] == 4 and partition["size_bytes"] > 0

        for route in ("isr-events", "replica-offsets"):
            assert as_viewer(cluster, broker_id, f"/topics/shown/{route}")[0] == 200
            status, body = as_viewer(cluster, broker_id, f"/topics/hidden/{route}")
            assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED"), (broker_id, route, body)
        status, body = as_viewer(cluster, broker_id, "/consumer-groups/others/lag-history")
        assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED"), (broker_id, body)
    (partition,) = as_viewer(cluster, 1, "/topics/shown/replica-offsets")[1]["partitions"]
    assert partition["reachable"] is True and partition["high_watermark"] == 4
