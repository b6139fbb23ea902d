"""Consumer groups on a real three-broker cluster: membership, fencing, lag, CLI, metrics.

Members are driven from the test (heartbeats over HTTP, each member through a different
broker, so forwarding to the coordinator is exercised); "stopping" a member means it
stops heartbeating, exactly what the coordinator sees of a SIGKILLed consumer.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
import urllib.request

import pytest

from tests.support.brokers import BrokerCluster, http_json
from tests.support.cli import run_cli
from tests.support.replication import wait_until

SESSION_TIMEOUT_MS = 1500
OFFSETS_PARTITIONS = 5
RETRIABLE_STATUSES = (421, 503, 504)


class GroupApi:
    """Blocking JSON calls to any broker; retriable answers (coordinator moving) are retried."""

    def __init__(self, cluster: BrokerCluster) -> None:
        self.cluster = cluster
        self.cluster_id = cluster.cluster_id()

    def urls(self) -> list[str]:
        return [b.url for b in self.cluster.brokers.values() if b.alive]

    def call(self, method: str, path: str, body: dict | None = None, url: str | None = None, deadline_s: float = 20):
        deadline = time.monotonic() + deadline_s
        while True:
            base = url or self.urls()[0]
            try:
                status, answer = http_json(method, f"{base}/v3/clusters/{self.cluster_id}{path}", body)
            except OSError:
                status, answer = 503, {}
            if status not in RETRIABLE_STATUSES or time.monotonic() > deadline:
                return status, answer
            time.sleep(0.1)

    def group(self, group_id: str, suffix: str = "") -> str:
        return f"/consumer-groups/{group_id}{suffix}"

    def create_topic(self, name: str, partitions: int) -> None:
        status, body = self.call(
            "POST", "/topics", {"topic_name": name, "partitions_count": partitions, "replication_factor": 3}
        )
        assert status == 201, body

    def high_watermarks(self, topic: str) -> dict[int, int]:
        status, body = self.call("GET", f"/topics/{topic}/partitions")
        assert status == 200, body
        return {p["partition_id"]: p["high_watermark"] for p in body["data"]}

    def produce(self, topic: str, partition: int, value: object) -> None:
        """Retries 404 briefly: a just-created partition may not yet be in the leader's metadata view."""
        deadline = time.monotonic() + 5
        while True:
            status, body = self.call(
                "POST", f"/topics/{topic}/records", {"partition_id": partition, "value": {"data": value}}
            )
            if status != 404 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 200, body


class Member:
    """A well-behaved KIP-848 member: echoes what it owns and drops revoked partitions at once."""

    def __init__(self, api: GroupApi, group_id: str, member_id: str, topics: list[str], url: str) -> None:
        self.api, self.group_id, self.member_id, self.topics, self.url = api, group_id, member_id, topics, url
        self.epoch, self.owned = 0, frozenset()
        self.last_heartbeat = 0.0

    def beat(self) -> None:
        body: dict = {
            "member_epoch": self.epoch,
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "client_id": f"client-{self.member_id}",
            "owned_partitions": _grouped(self.owned),
        }
        if self.epoch == 0:
            body["subscribed_topics"] = self.topics
        status, answer = self.api.call(
            "POST", self.api.group(self.group_id, f"/consumers/{self.member_id}:heartbeat"), body, self.url, 3
        )
        if status == 200:
            self.epoch = answer["member_epoch"]
            self.owned = frozenset((a["topic"], p) for a in answer["assignment"] for p in a["partitions"])
            self.last_heartbeat = time.monotonic()
        elif answer.get("error") in ("UNKNOWN_MEMBER_ID", "FENCED_MEMBER_EPOCH"):
            self.epoch, self.owned = 0, frozenset()

    def commit(self, offsets: dict[tuple[str, int], int], epoch: int | None = None) -> tuple[int, dict]:
        body = {
            "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch,
            "offsets": [{"topic_name": t, "partition_id": p, "offset": o} for (t, p), o in offsets.items()],
        }
        return self.api.call("POST", self.api.group(self.group_id, "/offsets"), body, self.url)


def _grouped(owned: frozenset) -> list[dict]:
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(owned):
        topics.setdefault(topic, []).append(partition)
    return [{"topic": t, "partitions": p} for t, p in topics.items()]


def beat_round(members: list[Member], owners_seen: list) -> None:
    for member in members:
        member.beat()
    owned = [tp for member in members for tp in member.owned]
    assert len(owned) == len(set(owned)), f"a partition owned twice: {[(m.member_id, m.owned) for m in members]}"
    owners_seen.append(owned)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIGHWATER_OFFSETS_TOPIC_NUM_PARTITIONS", str(OFFSETS_PARTITIONS))
        started = BrokerCluster(tmp_path_factory.mktemp("groups"), 3).start()
    try:
        yield started
    finally:
        started.shutdown()


@pytest.fixture(scope="module")
def api(cluster) -> GroupApi:
    return GroupApi(cluster)


def settle(members: list[Member], all_partitions: set, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    seen: list = []
    while time.monotonic() < deadline:
        beat_round(members, seen)
        union = set().union(*(m.owned for m in members))
        sizes = sorted(len(m.owned) for m in members)
        if union == all_partitions and sizes[-1] - sizes[0] <= 1:
            return
        time.sleep(0.05)
    raise AssertionError(f"group never settled: {[(m.member_id, sorted(m.owned)) for m in members]}")


def test_offsets_topic_is_internal_compacted_and_replicated(api: GroupApi) -> None:
    api.create_topic("probe", 1)
    status, _ = api.call(
        "POST",
        api.group("probe-group", "/offsets"),
        {"offsets": [{"topic_name": "probe", "partition_id": 0, "offset": 0}]},
    )
    assert status == 200
    status, topic = api.call("GET", "/topics/__consumer_offsets")
    assert status == 200
    assert topic["is_internal"] and topic["partitions_count"] == OFFSETS_PARTITIONS
    assert topic["replication_factor"] == 3
    assert {"name": "cleanup.policy", "value": "compact"} in topic["config_values"]


def test_commits_are_checked_against_each_leaders_high_watermark(api: GroupApi) -> None:
    """Partitions led by other brokers than the coordinator are asked of their leader."""
    api.create_topic("bounded", 6)
    for partition in range(6):
        api.produce("bounded", partition, partition)
    status, body = api.call(
        "POST",
        api.group("bounded-group", "/offsets"),
        {"offsets": [{"topic_name": "bounded", "partition_id": p, "offset": 1} for p in range(6)]},
    )
    assert status == 200, body
    leaders = {p["partition_id"]: p["leader_id"] for p in api.call("GET", "/topics/bounded/partitions")[1]["data"]}
    assert len(set(leaders.values())) == 3
    for partition in range(6):
        status, refused = api.call(
            "POST",
            api.group("bounded-group", "/offsets"),
            {"offsets": [{"topic_name": "bounded", "partition_id": partition, "offset": 2}]},
        )
        assert status == 416, refused
        assert refused["error"] == "OFFSET_OUT_OF_RANGE" and refused["high_watermark"] == 1
    status, committed = api.call("GET", api.group("bounded-group", "/offsets"))
    assert {entry["offset"] for entry in committed["data"]} == {1}


def test_members_split_partitions_and_a_silent_member_is_expelled(api: GroupApi) -> None:
    api.create_topic("orders", 6)
    everything = {("orders", p) for p in range(6)}
    urls = api.urls()
    members = [Member(api, "splitters", f"m{i}", ["orders"], urls[i % len(urls)]) for i in range(3)]
    settle(members, everything)
    assert sorted(len(m.owned) for m in members) == [2, 2, 2]
    rebalance_ms = []
    for round_ in range(3):
        silent = members[2]
        lost = silent.owned
        stopped_at = silent.last_heartbeat
        survivors, seen = members[:2], []
        while not lost <= set().union(*(m.owned for m in survivors)):
            assert time.monotonic() - stopped_at < SESSION_TIMEOUT_MS / 1000 + 3, "partitions never moved"
            beat_round(survivors, seen)
            time.sleep(0.05)
        rebalance_ms.append((time.monotonic() - stopped_at) * 1000)
        status, refused = silent.commit({tp: 0 for tp in lost})
        assert status == 404 and refused["error"] == "UNKNOWN_MEMBER_ID"
        members = [*survivors, Member(api, "splitters", f"m2-{round_}", ["orders"], urls[round_ % len(urls)])]
        settle(members, everything)
    status, described = api.call("GET", api.group("splitters", "/consumers"))
    assigned = [(a["topic_name"], a["partition_id"]) for c in described["data"] for a in c["assigned_partitions"]]
    assert sorted(assigned) == sorted(everything)
    median = statistics.median(rebalance_ms)
    print(
        f"\nrebalance after a member stops heartbeating (session {SESSION_TIMEOUT_MS} ms): "
        f"median {median:.0f} ms, all {[round(r) for r in rebalance_ms]}"
    )
    assert median < SESSION_TIMEOUT_MS + 1500


def test_commit_fencing_and_stateless_commits(api: GroupApi) -> None:
    api.create_topic("fenced", 2)
    member = Member(api, "fencing", "only", ["fenced"], api.urls()[1])
    settle([member], {("fenced", 0), ("fenced", 1)})
    status, ok = member.commit({("fenced", 0): 0})
    assert status == 200 and ok["data"][0]["offset"] == 0
    status, stale = member.commit({("fenced", 0): 0}, epoch=member.epoch - 1)
    assert status == 409 and stale["error"] == "STALE_MEMBER_EPOCH"
    stateless = {"offsets": [{"topic_name": "fenced", "partition_id": 1, "offset": 0}]}
    status, busy = api.call("POST", api.group("fencing", "/offsets"), stateless)
    assert status == 409 and busy["error"] == "NON_EMPTY_GROUP"
    status, _ = api.call("DELETE", api.group("fencing", "/consumers/only"))
    assert status == 204
    status, _ = api.call("POST", api.group("fencing", "/offsets"), stateless)
    assert status == 200
    status, unknown = member.commit({("fenced", 0): 0})
    assert status == 404 and unknown["error"] == "UNKNOWN_MEMBER_ID"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with a wide terminal, so a table's columns are never folded."""
    return run_cli(*args, env={**os.environ, "COLUMNS": "200"})


def _producer(api: GroupApi, topic: str, stop: threading.Event, produced: dict[int, int]) -> None:
    while not stop.is_set():
        for partition in (0, 1):
            api.produce(topic, partition, produced[partition])
            produced[partition] += 1
        time.sleep(0.02)


def _keep_alive(member: Member, stop: threading.Event) -> None:
    while not stop.wait(0.2):
        member.beat()


def test_lag_is_exact_grows_in_time_and_returns_to_ok(api: GroupApi) -> None:
    api.create_topic("events", 3)
    group = "laggers"
    consumer = Member(api, group, "slow", ["events"], api.urls()[2])
    settle([consumer], {("events", p) for p in range(3)})
    produced, stop = {0: 0, 1: 0}, threading.Event()
    first_record_ms = time.time() * 1000
    writer = threading.Thread(target=_producer, args=(api, "events", stop, produced))
    writer.start()
    alive = threading.Event()
    heartbeats = threading.Thread(target=_keep_alive, args=(consumer, alive))
    heartbeats.start()
    try:
        # The first records are acknowledged by now, so the one at offset 0 was stamped before this.
        wait_until(lambda: (hw := api.high_watermarks("events"))[0] >= 1 and hw[1] >= 2, 30, "records on 0 and 1")
        first_acked_ms = time.time() * 1000
        status, _ = consumer.commit({("events", 0): 0, ("events", 1): 1})
        assert status == 200
        before = api.high_watermarks("events")
        asked_ms = time.time() * 1000
        status, lags = api.call("GET", api.group(group, "/lags"))
        answered_ms = time.time() * 1000
        after = api.high_watermarks("events")
        assert status == 200
        rows = {row["partition_id"]: row for row in lags["data"]}
        for partition in (0, 1):
            row = rows[partition]
            assert before[partition] <= row["log_end_offset"] <= after[partition]
            assert row["lag"] == row["log_end_offset"] - row["current_offset"] > 0
            assert row["consumer_id"] == "slow" and row["client_id"] == "client-slow"
        assert rows[2]["current_offset"] is None and rows[2]["lag"] is None  # subscribed, never committed
        assert [r["partition_id"] for r in lags["data"]][-1] == 2  # unknown lag sorts last
        lags_known = [r["lag"] for r in lags["data"] if r["lag"] is not None]
        assert lags_known == sorted(lags_known, reverse=True)
        # lag in time is the age of the record at offset 0, stamped between these two instants
        assert asked_ms - first_acked_ms - 1 <= rows[0]["lag_ms"] <= answered_ms - first_record_ms + 1
        time.sleep(1.0)
        status, later = api.call("GET", api.group(group, "/lags/events/partitions/0"))
        assert later["lag_ms"] >= rows[0]["lag_ms"] + 900
    finally:
        stop.set()
        writer.join()
    final = api.high_watermarks("events")
    assert final[0] == produced[0] and final[1] == produced[1]
    try:
        status, _ = consumer.commit({("events", p): final[p] for p in range(3)})
        assert status == 200
        status, lags = api.call("GET", api.group(group, "/lags"))
        assert [(r["lag"], r["lag_ms"], r["status"]) for r in lags["data"]] == [(0, 0, "OK")] * 3
        status, summary = api.call("GET", api.group(group, "/lag-summary"))
        assert summary["total_lag"] == 0 and summary["status"] == "OK"
        _check_cli(api, group, final)
        _check_lag_metrics(api, group)
    finally:
        alive.set()
        heartbeats.join()


def _check_cli(api: GroupApi, group: str, final: dict[int, int]) -> None:

    described = cli("groups", "describe", group, "--server", api.urls()[0])
    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    assert lines[0].split() == [
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "LAG-MS",
        "CONSUMER-ID",
        "STATUS",
    ]
    assert ["events", "0", str(final[0]), str(final[0]), "0", "0", "slow", "OK"] in [line.split() for line in lines]
    stateless = {"offsets": [{"topic_name": "events", "partition_id": 0, "offset": 0}]}
    status, _ = api.call("POST", api.group("committed-only", "/offsets"), stateless)
    assert status == 200
    listed = cli("groups", "list", "--server", api.urls()[1])
    assert group in listed.stdout and "committed-only" in listed.stdout  # an empty group with commits is listed
    refused = cli("groups", "reset-offsets", group, "--to-earliest", "--server", api.urls()[0])
    assert refused.returncode == 1 and "NON_EMPTY_GROUP" in refused.stderr


def _check_lag_metrics(api: GroupApi, group: str) -> None:
    _, described = api.call("GET", api.group(group))
    coordinator = api.cluster.brokers[described["coordinator_id"]]
    deadline = time.monotonic() + 10
    text = ""
    while time.monotonic() < deadline:
        text = urllib.request.urlopen(f"{coordinator.url}/metrics", timeout=5).read().decode()
        if f'highwater_consumer_group_lag{{group="{group}",partition="0",topic="events"}} 0.0' in text:
            break
        time.sleep(0.5)
    else:
        raise AssertionError("lag gauge never appeared on the coordinator")
    assert "highwater_partition_isr_size" in text and "highwater_under_replicated_partitions" in text
    status, _ = api.call(
        "POST", "/topics/events/records", {"partition_id": 0, "value": {"data": 1}}, url=coordinator.url
    )
    assert status == 200
    text = urllib.request.urlopen(f"{coordinator.url}/metrics", timeout=5).read().decode()
    assert 'highwater_produce_request_duration_seconds_count{acks="all"}' in text, "the broker that answered counts it"


def test_reset_offsets_when_group_is_empty(api: GroupApi) -> None:
    api.create_topic("replay", 1)
    for value in range(5):
        api.produce("replay", 0, value)
    status, _ = api.call(
        "POST",
        api.group("resetters", "/offsets"),
        {"offsets": [{"topic_name": "replay", "partition_id": 0, "offset": 4}]},
    )
    assert status == 200
    dry = cli("groups", "reset-offsets", "resetters", "--to-earliest", "--dry-run", "--server", api.urls()[0])
    assert dry.returncode == 0 and "would reset 1" in dry.stdout
    assert api.call("GET", api.group("resetters", "/offsets"))[1]["data"][0]["offset"] == 4
    done = cli("groups", "reset-offsets", "resetters", "--to-offset", "2", "--server", api.urls()[1])
    assert done.returncode == 0, done.stderr
    assert api.call("GET", api.group("resetters", "/offsets"))[1]["data"][0]["offset"] == 2
    status, lag = api.call("GET", api.group("resetters", "/lags/replay/partitions/0"))
    assert lag["lag"] == 3 and lag["status"] == "REWIND"
