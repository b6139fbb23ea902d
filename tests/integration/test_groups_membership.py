"""Consumer groups on a real three-broker cluster: membership, fencing, lag, CLI, metrics.

Members are driven from the test (``group_members.Member``: heartbeats over HTTP, each
member through a different broker, so forwarding to the coordinator is exercised). No
test breaks a broker, so the module shares one cluster, each test in topics and groups
named after itself.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
import urllib.request

from tests.integration.group_members import (
    OFFSETS_PARTITIONS,
    SESSION_TIMEOUT_MS,
    Member,
    beat_round,
    group_call,
    group_path,
    high_watermarks,
    settle,
)
from tests.support.cli import run_cli
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

SPEC = ClusterSpec(settings={"offsets_topic_num_partitions": OFFSETS_PARTITIONS})
cluster = cluster_fixture(SPEC, scope="module")


def produce_one(cluster: Cluster, topic: str, partition: int, value: object) -> None:
    status, body = cluster.v3("POST", f"/topics/{topic}/records", {"partition_id": partition, "value": {"data": value}})
    assert status == 200, body


def test_offsets_topic_is_internal_compacted_and_replicated(cluster: Cluster, prefix: str) -> None:
    probe = f"{prefix}-probe"
    cluster.create_topic(probe)
    status, _ = group_call(
        cluster,
        "POST",
        group_path(f"{prefix}-group", "/offsets"),
        {"offsets": [{"topic_name": probe, "partition_id": 0, "offset": 0}]},
    )
    assert status == 200
    status, topic = group_call(cluster, "GET", "/topics/__consumer_offsets")
    assert status == 200
    assert topic["is_internal"] and topic["partitions_count"] == OFFSETS_PARTITIONS
    assert topic["replication_factor"] == 3
    assert {"name": "cleanup.policy", "value": "compact"} in topic["config_values"]


def test_commits_are_checked_against_each_leaders_high_watermark(cluster: Cluster, prefix: str) -> None:
    """Partitions led by other brokers than the coordinator are asked of their leader."""
    bounded, group = f"{prefix}-bounded", f"{prefix}-group"
    states = cluster.create_topic(bounded, 6)
    for partition in range(6):
        produce_one(cluster, bounded, partition, partition)
    status, body = group_call(
        cluster,
        "POST",
        group_path(group, "/offsets"),
        {"offsets": [{"topic_name": bounded, "partition_id": p, "offset": 1} for p in range(6)]},
    )
    assert status == 200, body
    assert len({state.leader_id for state in states.values()}) == 3
    for partition in range(6):
        status, refused = group_call(
            cluster,
            "POST",
            group_path(group, "/offsets"),
            {"offsets": [{"topic_name": bounded, "partition_id": partition, "offset": 2}]},
        )
        assert status == 416, refused
        assert refused["error"] == "OFFSET_OUT_OF_RANGE" and refused["high_watermark"] == 1
    status, committed = group_call(cluster, "GET", group_path(group, "/offsets"))
    assert {entry["offset"] for entry in committed["data"]} == {1}


def split(cluster: Cluster, prefix: str) -> tuple[list[Member], set[tuple[str, int]]]:
    """Three members, one through each broker, settled over a topic of six partitions: two each."""
    orders, group = f"{prefix}-orders", f"{prefix}-splitters"
    cluster.create_topic(orders, 6)
    everything = {(orders, p) for p in range(6)}
    members = [Member(cluster, group, f"m{i}", [orders], i + 1) for i in range(3)]
    settle(members, everything)
    assert sorted(len(m.owned) for m in members) == [2, 2, 2]
    return members, everything


def expel_the_silent_member(cluster: Cluster, members: list[Member], round_: int) -> tuple[list[Member], float]:
    """The last member stops heartbeating: once its partitions moved to the others (within the
    session timeout and 3 s) it is unknown, and a new member joins. The new members and the ms
    from the silent member's last heartbeat until its partitions moved."""
    silent, survivors = members[2], members[:2]
    lost = silent.owned
    stopped_at = silent.last_heartbeat
    seen: list[list[tuple[str, int]]] = []

    def moved() -> bool:
        beat_round(survivors, seen)
        return lost <= set().union(*(m.owned for m in survivors))

    remaining_s = stopped_at + SESSION_TIMEOUT_MS / 1000 + 3 - time.monotonic()
    cluster.wait_until(moved, f"the silent member's partitions {sorted(lost)} to move", remaining_s)
    moved_ms = (time.monotonic() - stopped_at) * 1000
    status, refused = silent.commit({tp: 0 for tp in lost})
    assert status == 404 and refused["error"] == "UNKNOWN_MEMBER_ID"
    return [*survivors, Member(cluster, silent.group_id, f"m2-{round_}", silent.topics, round_ % 3 + 1)], moved_ms


def test_members_split_partitions_and_a_silent_member_is_expelled(cluster: Cluster, prefix: str) -> None:
    members, everything = split(cluster, prefix)
    rebalance_ms = []
    for round_ in range(3):
        members, moved_ms = expel_the_silent_member(cluster, members, round_)
        rebalance_ms.append(moved_ms)
        settle(members, everything)
    status, described = group_call(cluster, "GET", group_path(members[0].group_id, "/consumers"))
    assert status == 200, described
    assigned = [(a["topic_name"], a["partition_id"]) for c in described["data"] for a in c["assigned_partitions"]]
    assert sorted(assigned) == sorted(everything)
    assert statistics.median(rebalance_ms) < SESSION_TIMEOUT_MS + 1500, rebalance_ms


def test_commit_fencing_and_stateless_commits(cluster: Cluster, prefix: str) -> None:
    fenced, group = f"{prefix}-fenced", f"{prefix}-fencing"
    cluster.create_topic(fenced, 2)
    member = Member(cluster, group, "only", [fenced], 2)
    settle([member], {(fenced, 0), (fenced, 1)})
    status, ok = member.commit({(fenced, 0): 0})
    assert status == 200 and ok["data"][0]["offset"] == 0
    status, stale = member.commit({(fenced, 0): 0}, epoch=member.epoch - 1)
    assert status == 409 and stale["error"] == "STALE_MEMBER_EPOCH"
    stateless = {"offsets": [{"topic_name": fenced, "partition_id": 1, "offset": 0}]}
    status, busy = group_call(cluster, "POST", group_path(group, "/offsets"), stateless)
    assert status == 409 and busy["error"] == "NON_EMPTY_GROUP"
    status, _ = group_call(cluster, "DELETE", group_path(group, "/consumers/only"))
    assert status == 204
    status, _ = group_call(cluster, "POST", group_path(group, "/offsets"), stateless)
    assert status == 200
    status, unknown = member.commit({(fenced, 0): 0})
    assert status == 404 and unknown["error"] == "UNKNOWN_MEMBER_ID"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with a wide terminal, so a table's columns are never folded."""
    return run_cli(*args, env={**os.environ, "COLUMNS": "200"})


def _producer(cluster: Cluster, topic: str, stop: threading.Event, produced: dict[int, int]) -> None:
    """Steady background traffic until ``stop``: the pause between rounds paces the load, it awaits nothing."""
    while not stop.wait(0.02):
        for partition in (0, 1):
            produce_one(cluster, topic, partition, produced[partition])
            produced[partition] += 1


def _keep_alive(member: Member, stop: threading.Event) -> None:
    """A live member's heartbeat interval: the pause is the member's rhythm, not a wait for anything."""
    while not stop.wait(0.2):
        member.beat()


def test_lag_is_exact_grows_in_time_and_returns_to_ok(cluster: Cluster, prefix: str) -> None:
    events, group = f"{prefix}-events", f"{prefix}-laggers"
    cluster.create_topic(events, 3)
    consumer = Member(cluster, group, "slow", [events], 3)
    settle([consumer], {(events, p) for p in range(3)})
    produced, stop = {0: 0, 1: 0}, threading.Event()
    first_record_ms = time.time() * 1000
    writer = threading.Thread(target=_producer, args=(cluster, events, stop, produced))
    writer.start()
    alive = threading.Event()
    heartbeats = threading.Thread(target=_keep_alive, args=(consumer, alive))
    heartbeats.start()
    try:
        # The first records are acknowledged by now, so the one at offset 0 was stamped before this.
        cluster.wait_until(
            lambda: (hw := high_watermarks(cluster, events))[0] >= 1 and hw[1] >= 2, "records on 0 and 1", 30
        )
        first_acked_ms = time.time() * 1000
        status, _ = consumer.commit({(events, 0): 0, (events, 1): 1})
        assert status == 200
        before = high_watermarks(cluster, events)
        asked_ms = time.time() * 1000
        status, lags = group_call(cluster, "GET", group_path(group, "/lags"))
        answered_ms = time.time() * 1000
        after = high_watermarks(cluster, events)
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
        _check_lag_grows_with_the_clock(cluster, group, events, rows[0]["lag_ms"], asked_ms, answered_ms)
    finally:
        stop.set()
        writer.join()
    final = high_watermarks(cluster, events)
    assert final[0] == produced[0] and final[1] == produced[1]
    try:
        status, _ = consumer.commit({(events, p): final[p] for p in range(3)})
        assert status == 200
        status, lags = group_call(cluster, "GET", group_path(group, "/lags"))
        assert [(r["lag"], r["lag_ms"], r["status"]) for r in lags["data"]] == [(0, 0, "OK")] * 3
        status, summary = group_call(cluster, "GET", group_path(group, "/lag-summary"))
        assert summary["total_lag"] == 0 and summary["status"] == "OK"
        _check_cli(cluster, prefix, group, events, final)
        _check_lag_metrics(cluster, group, events)
    finally:
        alive.set()
        heartbeats.join()


def _check_lag_grows_with_the_clock(
    cluster: Cluster, group: str, topic: str, first_lag_ms: int, asked_ms: float, answered_ms: float
) -> None:
    """Partition 0's committed record keeps ageing: its ``lag_ms`` grows by at least 900 ms, and by
    exactly the time between the two answers (within the instants each answer was asked and given)."""

    def grown() -> tuple[int, float, float] | None:
        later_asked_ms = time.time() * 1000
        status, later = group_call(cluster, "GET", group_path(group, f"/lags/{topic}/partitions/0"))
        later_answered_ms = time.time() * 1000
        assert status == 200, later
        growth = later["lag_ms"] - first_lag_ms
        return (growth, later_asked_ms, later_answered_ms) if growth >= 900 else None

    growth, later_asked_ms, later_answered_ms = cluster.wait_until(grown, "lag_ms to grow by 900 ms", 10)
    assert later_asked_ms - answered_ms - 1 <= growth <= later_answered_ms - asked_ms + 1


def _check_cli(cluster: Cluster, prefix: str, group: str, topic: str, final: dict[int, int]) -> None:
    described = cli("groups", "describe", group, "--server", cluster.url(1))
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
    assert [topic, "0", str(final[0]), str(final[0]), "0", "0", "slow", "OK"] in [line.split() for line in lines]
    committed_only = f"{prefix}-committed-only"
    stateless = {"offsets": [{"topic_name": topic, "partition_id": 0, "offset": 0}]}
    status, _ = group_call(cluster, "POST", group_path(committed_only, "/offsets"), stateless)
    assert status == 200
    listed = cli("groups", "list", "--server", cluster.url(2))
    assert group in listed.stdout and committed_only in listed.stdout  # an empty group with commits is listed
    refused = cli("groups", "reset-offsets", group, "--to-earliest", "--server", cluster.url(1))
    assert refused.returncode == 1 and "NON_EMPTY_GROUP" in refused.stderr


def _metrics(cluster: Cluster, broker_id: int) -> str:
    with urllib.request.urlopen(f"{cluster.url(broker_id)}/metrics", timeout=5) as response:
        return str(response.read().decode())


def _check_lag_metrics(cluster: Cluster, group: str, topic: str) -> None:
    _, described = group_call(cluster, "GET", group_path(group))
    coordinator = described["coordinator_id"]
    gauge = f'highwater_consumer_group_lag{{group="{group}",partition="0",topic="{topic}"}} 0.0'

    def gauged() -> str | None:
        text = _metrics(cluster, coordinator)
        return text if gauge in text else None

    text = cluster.wait_until(gauged, f"the lag gauge {gauge} on the coordinator", 10)
    assert "highwater_partition_isr_size" in text and "highwater_under_replicated_partitions" in text
    status, _ = cluster.v3(
        "POST", f"/topics/{topic}/records", {"partition_id": 0, "value": {"data": 1}}, via=coordinator
    )
    assert status == 200
    text = _metrics(cluster, coordinator)
    assert 'highwater_produce_request_duration_seconds_count{acks="all"}' in text, "the broker that answered counts it"


def test_reset_offsets_when_group_is_empty(cluster: Cluster, prefix: str) -> None:
    replay, group = f"{prefix}-replay", f"{prefix}-resetters"
    cluster.create_topic(replay)
    for value in range(5):
        produce_one(cluster, replay, 0, value)
    status, _ = group_call(
        cluster,
        "POST",
        group_path(group, "/offsets"),
        {"offsets": [{"topic_name": replay, "partition_id": 0, "offset": 4}]},
    )
    assert status == 200
    dry = cli("groups", "reset-offsets", group, "--to-earliest", "--dry-run", "--server", cluster.url(1))
    assert dry.returncode == 0 and "would reset 1" in dry.stdout
    assert group_call(cluster, "GET", group_path(group, "/offsets"))[1]["data"][0]["offset"] == 4
    done = cli("groups", "reset-offsets", group, "--to-offset", "2", "--server", cluster.url(2))
    assert done.returncode == 0, done.stderr
    assert group_call(cluster, "GET", group_path(group, "/offsets"))[1]["data"][0]["offset"] == 2
    status, lag = group_call(cluster, "GET", group_path(group, f"/lags/{replay}/partitions/0"))
    assert lag["lag"] == 3 and lag["status"] == "REWIND"
