"""Committed offsets survive a SIGKILL of the group coordinator: the new leader of the
group's ``__consumer_offsets`` partition rebuilds them from the replicated log.

The test kills a broker, so it has a cluster of its own.
"""

from __future__ import annotations

import time

from tests.integration.group_members import OFFSETS_PARTITIONS, Member, group_call, group_path
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

SPEC = ClusterSpec(settings={"offsets_topic_num_partitions": OFFSETS_PARTITIONS})
cluster = cluster_fixture(SPEC)

RECORDS_PER_PARTITION = 100
"""Every offset the test commits lies at or below the high watermark, as the coordinator requires."""


def committed(cluster: Cluster, group: str, via: int) -> dict[int, int]:
    status, body = group_call(cluster, "GET", group_path(group, "/offsets"), via=via, timeout_s=30)
    assert status == 200, body
    return {entry["partition_id"]: entry["offset"] for entry in body["data"]}


GROUP = "durable"
EXPECTED = {0: 42, 1: 11, 2: 12, 3: 13}
"""What ``GROUP`` has committed on ``ledger`` once ``with_committed_offsets`` ran."""


def with_committed_offsets(cluster: Cluster) -> None:
    """``ledger``'s four partitions filled, and ``GROUP``'s commits on them (the last one overwriting partition 0)."""
    cluster.create_topic("ledger", 4)
    entries = [{"partition_id": p, "value": {"data": i}} for p in range(4) for i in range(RECORDS_PER_PARTITION)]
    status, produced = cluster.v3("POST", "/topics/ledger/records:batch", {"entries": entries})
    assert status == 207 and not produced["failures"], produced
    for offsets in ({p: 10 + p for p in range(4)}, {0: 42}):
        status, body = group_call(
            cluster,
            "POST",
            group_path(GROUP, "/offsets"),
            {"offsets": [{"topic_name": "ledger", "partition_id": p, "offset": o} for p, o in offsets.items()]},
        )
        assert status == 200, body


def coordinator_of(cluster: Cluster, group: str, via: int | None = None) -> int:
    status, described = group_call(cluster, "GET", group_path(group), via=via)
    assert status == 200, described
    return int(described["coordinator_id"])


def kill_the_coordinator(cluster: Cluster, survivor: int) -> float:
    """SIGKILL ``GROUP``'s coordinator; the ms until its commits are readable again through ``survivor``."""
    cluster.brokers[coordinator_of(cluster, GROUP)].kill()
    killed_at = time.monotonic()
    assert committed(cluster, GROUP, survivor) == EXPECTED
    return (time.monotonic() - killed_at) * 1000


def test_committed_offsets_survive_coordinator_sigkill(cluster: Cluster) -> None:
    with_committed_offsets(cluster)
    coordinator_id = coordinator_of(cluster, GROUP)
    survivor = next(i for i in cluster.brokers if i != coordinator_id)
    member = Member(cluster, GROUP + "-live", "survivor", ["ledger"], survivor)
    cluster.wait_until(member.beat, f"the first heartbeat of a member through broker {survivor}", 3)
    assert member.epoch > 0

    kill_the_coordinator(cluster, survivor)
    assert coordinator_of(cluster, GROUP, via=survivor) != coordinator_id

    status, body = group_call(
        cluster,
        "POST",
        group_path(GROUP, "/offsets"),
        {"offsets": [{"topic_name": "ledger", "partition_id": 1, "offset": 99}]},
        via=survivor,
    )
    assert status == 200, body
    assert committed(cluster, GROUP, survivor)[1] == 99

    cluster.wait_until(
        lambda: member.beat() and member.owned == {("ledger", p) for p in range(4)},
        "the member to rejoin at the new coordinator and own every partition",
        30,
    )
