"""A throttled move on real brokers: the copy travels no faster than the rate, and the throttle is lifted after.

The partition holds about 2 MB in batches of about 50 KB before it moves; at 400 000
bytes/s the copy cannot take less than its bytes over the rate, less what the quota lets
through at once: a tenth of a second saved up, and one round, a tenth of a second's worth
or one whole batch, whichever is more (a read never splits a batch,
``broker.replication.throttle``).
An unthrottled move of the same log takes a fraction of that (``tests.benchmarks.move_rate``
measures well over 100 MB/s here), so the lower bound fails if a side does not throttle;
no upper bound is asserted, since a slow machine only makes the move slower. Accuracy
against the setting is measured by the benchmark (``move_rate MB RATE``), not asserted.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from rich.filesize import decimal

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

cluster = cluster_fixture(ClusterSpec(), scope="module")
RATE = 400_000
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
UNLIMITED = (str(2**63 - 1), "DEFAULT_CONFIG")


BATCHES, BATCH_RECORDS, RECORD_CHARS = 40, 100, 500


def _filled_topic(cluster: Cluster, topic: str) -> int:
    """A one-partition topic on brokers 1 (leading) and 2, filled by ``_fill``; the leader's log bytes."""
    status, created = cluster.v3("POST", "/topics", {"topic_name": topic, "replicas_assignments": {"0": [1, 2]}})
    assert status == 201, created
    cluster.wait_for_topic(topic, 1)
    log_bytes = _fill(cluster, topic)
    assert log_bytes > 1_900_000, log_bytes
    return log_bytes


def _fill(cluster: Cluster, topic: str) -> int:
    """About 2 MB of incompressible records on partition 0, in batches of about 50 KB; the leader's log bytes."""
    for _ in range(BATCHES):
        values = [os.urandom(RECORD_CHARS // 2).hex() for _ in range(BATCH_RECORDS)]
        status, answer = cluster.produce(topic, values, via=1)
        assert status == 207, answer
    return _log_bytes(cluster, 1, topic)


def _log_bytes(cluster: Cluster, broker_id: int, topic: str) -> int:
    return sum(path.stat().st_size for path in Path(cluster.brokers[broker_id].data_dir).glob(f"{topic}-0/*.log"))


def _in_place(cluster: Cluster, topic: str, target: list[int]) -> bool:
    state = cluster.partitions(topic, via=1)[0]
    return state.replicas == target and sorted(state.isr) == sorted(target)


def _rate(cluster: Cluster, broker_id: int, name: str) -> tuple[str, str]:
    status, config = cluster.v3("GET", f"/brokers/{broker_id}/configs/{name}", via=broker_id)
    assert status == 200, config
    return config["value"], config["source"]


def _floor_s(log_bytes: int) -> float:
    """The least time a copy of ``log_bytes`` at ``RATE`` can take (the quota's burst and one round let through)."""
    batch_bytes = log_bytes / BATCHES
    return (log_bytes - 0.1 * RATE - max(0.1 * RATE, batch_bytes)) / RATE


def test_reassign_with_throttle_copies_no_faster_than_the_rate_then_lifts_it(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-throttled"
    log_bytes = _filled_topic(cluster, topic)

    started = time.monotonic()
    out = cluster.cli(
        ["partitions", "reassign", "--topic", topic, "--partition", "0", "--replicas", "1,3", "--throttle", str(RATE)],
        env=cluster.cli_env(via=2),
    )
    seconds = time.monotonic() - started
    assert "moving 1 partition(s)" in out, out
    assert _in_place(cluster, topic, [1, 3])
    assert seconds >= _floor_s(log_bytes), f"{log_bytes} bytes copied in {seconds:.2f} s, over {RATE} bytes/s"
    for broker_id in (1, 2, 3):

        def lifted(broker_id: int = broker_id) -> bool:
            return all(_rate(cluster, broker_id, name) == UNLIMITED for name in RATES)

        cluster.wait_until(lifted, f"broker {broker_id} to lift the throttle the move set")
    assert _log_bytes(cluster, 3, topic) == log_bytes, "the new replica holds another log than the leader"
    _check_log_dirs(cluster, topic, log_bytes)


def _check_log_dirs(cluster: Cluster, topic: str, log_bytes: int) -> None:
    """Each broker's log-dirs (asked through broker 1, which passes the others on) and ``brokers list`` agree."""
    sizes = {}
    for broker_id in (1, 2, 3):
        status, answer = cluster.v3("GET", f"/brokers/{broker_id}/log-dirs", via=1)
        assert status == 200, answer
        [log_dir] = answer["data"]
        assert log_dir["broker_id"] == broker_id
        assert log_dir["size_bytes"] == sum(row["size_bytes"] for row in log_dir["replicas"])
        sizes[broker_id] = {row["topic_name"]: row["size_bytes"] for row in log_dir["replicas"]}
    assert sizes[1][topic] == sizes[3][topic] == log_bytes
    cluster.wait_until(
        lambda: (
            topic not in {row["topic_name"] for row in cluster.api("GET", "/brokers/2/log-dirs")["data"][0]["replicas"]}
        ),
        "broker 2 to drop the replica the move removed",
    )
    listed = cluster.cli(["brokers", "list"], env=cluster.cli_env(via=2))
    assert "bytes" in listed and decimal(sum(sizes[3].values())) in listed, listed


def test_the_leader_alone_throttles_a_copy_it_sends(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-leader-throttled"
    log_bytes = _filled_topic(cluster, topic)
    assert cluster.v3("PUT", f"/brokers/1/configs/{RATES[0]}", {"value": str(RATE)}, via=1)[0] == 204
    try:
        assert _rate(cluster, 3, RATES[1]) == UNLIMITED, "the follower must not throttle in this test"
        body = {"data": [{"topic_name": topic, "partition_id": 0, "replicas": [1, 3]}]}
        started = time.monotonic()
        status, answer = cluster.v3("POST", "/topics/-/partitions/-/reassignment:alter", body, via=1)
        assert status == 202, answer
        cluster.wait_until(lambda: _in_place(cluster, topic, [1, 3]), "the move to complete", timeout_s=60)
        seconds = time.monotonic() - started
    finally:
        assert cluster.v3("DELETE", f"/brokers/1/configs/{RATES[0]}", via=1)[0] == 204
    assert seconds >= _floor_s(log_bytes), f"{log_bytes} bytes copied in {seconds:.2f} s, over {RATE} bytes/s"
