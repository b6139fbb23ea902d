"""The console's data against a real 3-broker cluster: rates, lag over time, ISR events, replica offsets.

Brokers sample every 200 ms (``HIGHWATER_CONSOLE__*``), so every wait below is a poll
with a deadline for the next samples, never a sleep. The follower pause uses a lag
time of 4 s and a session of 8 s: the leader removes the paused follower itself
(``shrink`` after the lag time), and there is time to see the high watermark held at
the paused follower's log end offset before that.

With authentication on, each route is asked of every broker (two of three forward a
group's request to its coordinator, and activity fans out to the others with broker
credentials) as a viewer who may DESCRIBE one topic of two.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from typer.testing import CliRunner

from broker.cli.app import app
from broker.storage.log_manager import partition_directory_name
from broker.storage.segment import LOG_SUFFIX
from tests.support.brokers import BrokerCluster, http_json
from tests.support.replication import FAST_ENV, ReplicatedTopic, start_cluster, wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}
CONSOLE_ENV = {
    "HIGHWATER_CONSOLE__LAG_SAMPLE_INTERVAL_MS": "200",
    "HIGHWATER_CONSOLE__ACTIVITY_SAMPLE_INTERVAL_MS": "200",
    "HIGHWATER_REPLICA_LAG_TIME_MAX_MS": "4000",
    "HIGHWATER_BROKER_SESSION_TIMEOUT_MS": "8000",
    "HIGHWATER_OFFSETS_TOPIC_NUM_PARTITIONS": "1",
}


@pytest.fixture(scope="module")
def console_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerCluster]:
    """One cluster for the module: each test works on topics and a group of its own, and a test
    that pauses a broker resumes it and waits for its partitions to catch up before it ends."""
    started = start_cluster(tmp_path_factory.mktemp("console-data"), env=CONSOLE_ENV)
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


def segment_bytes_on_disk(cluster: BrokerCluster, broker_id: int, topic: str, partition: int) -> int:
    directory = cluster.brokers[broker_id].data_dir / partition_directory_name(topic, partition)
    return sum(path.stat().st_size for path in directory.glob(f"*{LOG_SUFFIX}"))


def leader_size(cluster: BrokerCluster, topic: str) -> tuple[int, int]:
    """The one partition's leader and its ``size_bytes``, asked of a broker that does not lead it."""
    leader = get(f"{base(cluster)}/topics/{topic}/partitions/0")["leader_id"]
    (partition,) = get(f"{base(cluster, min(ALL_BROKERS - {leader}))}/topics/{topic}/replica-offsets")["partitions"]
    assert partition["leader_id"] == leader
    return leader, partition["size_bytes"]


def test_rates_and_lag_history_follow_production_and_commits(console_cluster: BrokerCluster) -> None:
    cluster = console_cluster
    topic = ReplicatedTopic(cluster, name="traffic")
    topic.create()
    assert leader_size(cluster, "traffic")[1] == 0
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
    leader, size = leader_size(cluster, "traffic")
    assert size == segment_bytes_on_disk(cluster, leader, "traffic", 0) > 0
    produce(topic, 20, "second")
    total = produced + 20
    leader, grown = leader_size(cluster, "traffic")
    assert grown == segment_bytes_on_disk(cluster, leader, "traffic", 0) > size
    wait_until(lambda: lag_totals(cluster, "watchers")[-1:] == [total], 10, f"a lag sample of {total}")
    assert_no_fetch_traffic(cluster, "traffic")
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
    assert_a_forwarded_read_counts_once_where_it_entered(cluster, topic, leader)


def fetch_rates(activity: dict[str, Any]) -> dict[int, float]:
    return {b["broker_id"]: b["fetch_records_per_s"] for b in activity["brokers"]}


def assert_no_fetch_traffic(cluster: BrokerCluster, topic: str) -> None:
    """The group lags and its coordinator reads a record every sample to date the lag (its
    ``lag_ms``): that is no consumer's fetch, on the leader or anywhere else."""
    activity = get(f"{base(cluster)}/activity")
    (entry,) = [t for t in activity["topics"] if t["topic_name"] == topic]
    assert len(entry["history"]) > 1
    assert [p["fetch_records_per_s"] for p in entry["history"] if p["fetch_records_per_s"]] == []
    assert set(fetch_rates(activity).values()) == {0}


def assert_a_forwarded_read_counts_once_where_it_entered(
    cluster: BrokerCluster, topic: ReplicatedTopic, leader: int
) -> None:
    """A consumer reading through a broker that does not lead: that broker counts the read,
    the leader serving the forwarded read does not count it again."""
    entry = min(ALL_BROKERS - {leader})

    def counted() -> dict | None:
        status, body = http_json("GET", f"{topic.base(entry)}/partitions/0/records?offset=0&format=string")
        assert status == 200 and body["data"], body
        rates = fetch_rates(get(f"{base(cluster)}/activity"))
        assert {b: r for b, r in rates.items() if b != entry} == {b: 0 for b in ALL_BROKERS - {entry}}, rates
        return rates if rates[entry] > 0 else None

    wait_until(counted, 10, f"a fetch rate on broker {entry}, where the reads enter")


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
    controller = get(f"{cluster.any_url()}/v3/clusters")["data"][0]["controller_id"]
    # Never the controller: paused, it could not take the shrink in until a new one is elected.
    follower = min(ALL_BROKERS - {leader, controller})
    topic.produce_ok("warm-up")
    assert events(cluster, leader, "paused") == []

    cluster.brokers[follower].pause()
    try:
        # One request, so the first look comes well within the lag time that ends the hold.
        entries = [{"partition_id": 0, "value": {"type": "STRING", "data": f"while-paused-{i}"}} for i in range(5)]
        status, reply = http_json("POST", f"{topic.base(leader)}/records:batch?acks=1", {"entries": entries})
        assert status in (200, 207) and not reply["failures"], reply

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


def test_a_partition_whose_leader_is_paused_is_reported_unreachable_not_failed(console_cluster: BrokerCluster) -> None:
    cluster = console_cluster
    ReplicatedTopic(cluster, name="spread").create()
    status, reply = http_json(
        "POST", f"{base(cluster)}/topics", {"topic_name": "three", "partitions_count": 3, "replication_factor": 3}
    )
    assert status == 201, reply
    leaders = wait_until(
        lambda: {p["leader_id"] for p in get(f"{base(cluster)}/topics/three/replica-offsets")["partitions"]},
        10,
        "leaders for every partition",
    )
    paused = 3
    assert paused in leaders, leaders
    cluster.brokers[paused].pause()
    try:
        partitions = get(f"{base(cluster, 1)}/topics/three/replica-offsets")["partitions"]
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


ADMIN_PASSWORD = "admin-pw"
VIEWER_PASSWORD = "viewer-pw"
ADMIN = {"Authorization": aiohttp.encode_basic_auth("admin", ADMIN_PASSWORD)}
VIEWER = {"Authorization": aiohttp.encode_basic_auth("viewer", VIEWER_PASSWORD)}


@pytest.fixture
def secured_cluster(tmp_path: Path) -> Iterator[BrokerCluster]:
    """Basic authentication, admin created offline as the README says, a viewer added through the API."""
    store = f"sqlite://{(tmp_path / 'metadata.db').resolve()}"
    added = CliRunner().invoke(
        app, ["users", "add", "admin", "--password-stdin", "--metadata", store], input=ADMIN_PASSWORD + "\n"
    )
    assert added.exit_code == 0, added.output
    cluster = BrokerCluster(tmp_path, 3, metadata_store=store)
    for broker in cluster.brokers.values():
        broker.env = {
            **FAST_ENV,
            **CONSOLE_ENV,
            "HIGHWATER_SECURITY__AUTHENTICATION": "basic",
            "HIGHWATER_SECURITY__SUPER_USERS": '["admin"]',
        }
        broker.auth_headers = ADMIN
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.shutdown()


def as_admin(cluster: BrokerCluster, method: str, path: str, body: dict, expected: int = 200) -> None:
    status, reply = http_json(method, f"{base(cluster)}{path}", body, headers=ADMIN)
    assert status == expected, reply


def as_viewer(cluster: BrokerCluster, broker_id: int, path: str) -> tuple[int, dict[str, Any]]:
    return http_json("GET", f"{base(cluster, broker_id)}{path}", headers=VIEWER)


def test_each_route_answers_only_what_the_viewer_may_describe_on_every_broker(secured_cluster: BrokerCluster) -> None:
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
        as_admin(cluster, "POST", "/topics", {"topic_name": topic, "partitions_count": 1, "replication_factor": 3}, 201)
        for value in range(4):
            wait_until(
                lambda t=topic, v=value: (
                    http_json("POST", f"{base(cluster)}/topics/{t}/records", {"value": {"data": v}}, headers=ADMIN)[0]
                    == 200
                ),
                10,
                f"record {value} produced to {topic}",
            )
    offsets = [{"topic_name": topic, "partition_id": 0, "offset": 1} for topic in ("shown", "hidden")]
    as_admin(cluster, "POST", "/consumer-groups/watchers/offsets", {"offsets": offsets})

    for broker_id in ALL_BROKERS:

        def sampled(b: int = broker_id) -> dict | None:
            status, body = as_viewer(cluster, b, "/consumer-groups/watchers/lag-history")
            assert status == 200, body
            return body["samples"][-1] if body["samples"] and body["samples"][-1]["total_lag"] == 3 else None

        sample = wait_until(sampled, 10, f"a lag sample through broker {broker_id}")
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
