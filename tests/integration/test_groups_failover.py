"""Committed offsets survive a SIGKILL of the group coordinator: the new leader of the
group's ``__consumer_offsets`` partition rebuilds them from the replicated log."""

from __future__ import annotations

import time

import pytest

from tests.integration.test_groups_membership import OFFSETS_PARTITIONS, GroupApi, Member
from tests.support.brokers import BrokerCluster


@pytest.fixture
def cluster(tmp_path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIGHWATER_OFFSETS_TOPIC_NUM_PARTITIONS", str(OFFSETS_PARTITIONS))
        started = BrokerCluster(tmp_path, 3).start()
    try:
        yield started
    finally:
        started.shutdown()


RECORDS_PER_PARTITION = 100
"""Every offset the test commits lies at or below the high watermark, as the coordinator requires."""


def committed(api: GroupApi, group: str, url: str) -> dict[int, int]:
    status, body = api.call("GET", api.group(group, "/offsets"), url=url, deadline_s=30)
    assert status == 200, body
    return {entry["partition_id"]: entry["offset"] for entry in body["data"]}


def test_committed_offsets_survive_coordinator_sigkill(cluster: BrokerCluster) -> None:
    api = GroupApi(cluster)
    api.create_topic("ledger", 4)
    entries = [{"partition_id": p, "value": {"data": i}} for p in range(4) for i in range(RECORDS_PER_PARTITION)]
    status, produced = api.call("POST", "/topics/ledger/records:batch", {"entries": entries})
    assert status == 207 and not produced["failures"], produced
    group = "durable"
    for offsets in ({p: 10 + p for p in range(4)}, {0: 42}):
        status, body = api.call(
            "POST",
            api.group(group, "/offsets"),
            {"offsets": [{"topic_name": "ledger", "partition_id": p, "offset": o} for p, o in offsets.items()]},
        )
        assert status == 200, body
    expected = {0: 42, 1: 11, 2: 12, 3: 13}
    status, described = api.call("GET", api.group(group))
    coordinator_id = described["coordinator_id"]
    survivor = next(b for i, b in cluster.brokers.items() if i != coordinator_id)
    member = Member(api, group + "-live", "survivor", ["ledger"], survivor.url)
    member.beat()
    assert member.epoch > 0

    cluster.brokers[coordinator_id].kill()
    killed_at = time.monotonic()
    assert committed(api, group, survivor.url) == expected
    recovered_s = time.monotonic() - killed_at
    status, moved = api.call("GET", api.group(group), url=survivor.url)
    assert moved["coordinator_id"] != coordinator_id
    print(f"\ncoordinator failover: offsets readable again {recovered_s:.1f} s after SIGKILL")

    status, body = api.call(
        "POST",
        api.group(group, "/offsets"),
        {"offsets": [{"topic_name": "ledger", "partition_id": 1, "offset": 99}]},
        url=survivor.url,
    )
    assert status == 200, body
    assert committed(api, group, survivor.url)[1] == 99

    deadline = time.monotonic() + 30
    while member.owned != {("ledger", p) for p in range(4)}:
        assert time.monotonic() < deadline, "the member never rejoined at the new coordinator"
        member.beat()
        time.sleep(0.1)
