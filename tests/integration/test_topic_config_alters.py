"""Topic configs and cluster-wide topic defaults altered at runtime, applied by every replica of three real brokers.

An alter is a change of the topic record; each broker applies it to its replicas where
its metadata watch delivers it. The broker that took the alter answers once its own
view has it, so an alter sent to the leader is in force at the leader when the answer
arrives; through another broker the tests wait for the effect, as a client must.
Every check is an effect, not a listing: a produce refused or acknowledged, a high
watermark that moves, segment files rolled and deleted on each broker's disk.

Each test has a cluster of its own: one kills a broker, one changes every broker's
defaults, and the one left alone would share a cluster with nobody.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.storage.log_manager import partition_directory_name
from broker.storage.segment import LOG_SUFFIX
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture
from tests.support.replication import (
    create_replicated,
    describe,
    fetch_page,
    produce_ok,
    produce_one,
    read_all,
    read_page,
    wait_for_isr,
)
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}

cluster = cluster_fixture(ClusterSpec(settings={"log_retention_check_interval_ms": 200}))
"""Three brokers whose retention runs every 200 ms."""


def _alter(cluster: Cluster, topic: str, via: int, name: str, value: str) -> None:
    status, reply = cluster.v3("PUT", f"/topics/{topic}/configs/{name}", {"value": value}, via=via)
    assert status == 204, reply


def _wait_listed_everywhere(cluster: Cluster, topic: str, name: str, value: str) -> None:
    """Until every broker's view holds the altered record (the view applies it to the replicas first)."""
    for broker_id in ALL_BROKERS:

        def listed(b: int = broker_id) -> bool:
            status, reply = cluster.v3("GET", f"/topics/{topic}/configs/{name}", via=b)
            return status == 200 and reply["value"] == value

        wait_until(listed, f"broker {broker_id} to list {name}={value}", 10.0)


def _segment_files(cluster: Cluster, broker_id: int, topic: str) -> list[Path]:
    directory = cluster.brokers[broker_id].data_dir / partition_directory_name(topic, 0)
    return sorted(directory.glob(f"*{LOG_SUFFIX}"))


def _segments_at_or_below(cluster: Cluster, broker_id: int, topic: str, offset: int) -> int:
    """How many of a replica's segments start at or below ``offset``: 1 once none lies wholly below it.

    Followers roll where their own appends cross ``segment.bytes``, so their segment
    bounds need not be the leader's; the one holding ``offset`` stays on every replica.
    """
    return sum(int(path.stem) <= offset for path in _segment_files(cluster, broker_id, topic))


def test_min_insync_replicas_altered_on_a_live_partition_holds_and_releases_acks_all(cluster: Cluster) -> None:
    topic = "min-isr-altered"
    create_replicated(cluster, topic, min_insync_replicas=3)
    committed = [produce_ok(cluster, topic, f"committed-{i}") for i in range(3)]
    leader = describe(cluster, topic)["leader_id"]
    stopped, other = sorted(ALL_BROKERS - {leader})
    cluster.brokers[stopped].kill()
    try:
        wait_for_isr(cluster, topic, {leader, other})

        status, reply = produce_one(cluster, topic, "refused")
        assert (status, reply["error"]) == (503, "NOT_ENOUGH_REPLICAS"), reply
        held = produce_ok(cluster, topic, "held", acks="1")
        assert held == len(committed)
        assert describe(cluster, topic)["high_watermark"] == held, "min ISR 3 holds the HW with two replicas in sync"

        _alter(cluster, topic, other, "min.insync.replicas", "2")
        wait_until(
            lambda: describe(cluster, topic)["high_watermark"] == held + 1, "the held record to become visible", 10.0
        )
        released = produce_ok(cluster, topic, "acks-all-with-min-isr-2")

        _alter(cluster, topic, leader, "min.insync.replicas", "3")
        end_before = describe(cluster, topic)["log_end_offset"]
        status, reply = produce_one(cluster, topic, "refused-again")
        assert (status, reply["error"]) == (503, "NOT_ENOUGH_REPLICAS"), reply
        assert describe(cluster, topic)["log_end_offset"] == end_before, "a refused acks=all wrote something"
    finally:
        cluster.brokers[stopped].start()
    wait_for_isr(cluster, topic, ALL_BROKERS)
    last = produce_ok(cluster, topic, "acks-all-with-three")
    assert [offset for offset, _ in read_all(cluster, topic)] == [*committed, held, released, last]


def test_segment_and_retention_configs_altered_on_a_live_topic_reach_every_replicas_files(
    cluster: Cluster,
) -> None:
    topic = "retention-altered"
    create_replicated(cluster, topic)
    for i in range(5):
        produce_ok(cluster, topic, f"before-{i}-" + "x" * 300)
    assert all(len(_segment_files(cluster, b, topic)) == 1 for b in ALL_BROKERS)

    _alter(cluster, topic, 1, "segment.bytes", "1024")
    _wait_listed_everywhere(cluster, topic, "segment.bytes", "1024")
    for i in range(12):
        produce_ok(cluster, topic, f"after-{i}-" + "x" * 300)
    end = describe(cluster, topic)["log_end_offset"]
    wait_for_isr(cluster, topic, ALL_BROKERS)
    for broker_id in ALL_BROKERS:

        def rolled(b: int = broker_id) -> bool:
            return len(_segment_files(cluster, b, topic)) >= 4

        wait_until(rolled, f"broker {broker_id} to roll 1 KiB segments", 10.0)

    _alter(cluster, topic, 2, "retention.ms", "1")
    kept = wait_until(
        lambda: (start := describe(cluster, topic)["log_start_offset"]) > 0 and start,
        "the leader's retention to move the log start offset",
        10.0,
    )
    assert kept <= end
    for broker_id in ALL_BROKERS:

        def deleted(b: int = broker_id) -> bool:
            return _segments_at_or_below(cluster, b, topic, kept) == 1

        wait_until(deleted, f"broker {broker_id} to delete the segments wholly below the log start offset {kept}", 10.0)
    page = read_page(cluster, topic, kept)
    assert page["data"][-1]["value"]["data"].startswith("after-11-")
    status, reply = fetch_page(cluster, topic, 0)
    assert (status, reply["error"]) == (416, "OFFSET_OUT_OF_RANGE"), reply


def test_a_cluster_wide_default_reaches_new_topics_and_the_live_replicas_that_do_not_override_it(
    cluster: Cluster,
) -> None:
    defaulted = "follows-the-default"
    create_replicated(cluster, defaulted, min_insync_replicas=2)
    overridden = "keeps-its-own"
    create_replicated(cluster, overridden, min_insync_replicas=2)
    _alter(cluster, overridden, 1, "max.message.bytes", "100000")
    status, reply = cluster.v3("PUT", "/broker-configs/message.max.bytes", {"value": "400"}, via=2)
    assert status == 204, reply
    try:
        for broker_id in ALL_BROKERS:

            def applied(b: int = broker_id) -> bool:
                status, reply = cluster.v3("GET", f"/brokers/{b}/configs/message.max.bytes", via=b)
                return status == 200 and reply["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"

            wait_until(applied, f"broker {broker_id} to apply message.max.bytes=400", 10.0)
            status, reply = produce_one(cluster, defaulted, "x" * 500, via=broker_id)
            assert (status, reply["error"]) == (413, "MESSAGE_TOO_LARGE"), reply
            assert produce_one(cluster, overridden, "x" * 500, via=broker_id)[0] == 200, "a topic override must win"
        status, listing = cluster.v3("GET", "/broker-configs", via=3)
        assert status == 200, listing
        assert [(c["name"], c["value"], c["source"]) for c in listing["data"]] == [
            ("message.max.bytes", "400", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        ]
        status, config = cluster.v3("GET", f"/topics/{defaulted}/configs/max.message.bytes", via=3)
        assert (status, config["value"], config["source"]) == (200, "400", "DYNAMIC_DEFAULT_BROKER_CONFIG"), config

        status, reply = cluster.v3("PUT", "/broker-configs/num.partitions", {"value": "3"}, via=1)
        assert status == 204, reply
        created = {"topic_name": "counted-by-the-default", "replication_factor": 1}
        status, topic = cluster.v3("POST", "/topics", created, via=1)
        assert (status, topic["partitions_count"]) == (201, 3), topic
    finally:
        alter = {"data": [{"name": n, "operation": "DELETE"} for n in ("message.max.bytes", "num.partitions")]}
        status, reply = cluster.v3("POST", "/broker-configs:alter", alter, via=3)
        assert status == 204, reply
    for broker_id in ALL_BROKERS:

        def restored(b: int = broker_id) -> bool:
            return produce_one(cluster, defaulted, "x" * 500, via=b)[0] == 200

        wait_until(restored, f"broker {broker_id} to take the static default back", 10.0)
