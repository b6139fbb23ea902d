"""Topic configs and cluster-wide topic defaults altered at runtime, applied by every replica of three real brokers.

An alter is a change of the topic record; each broker applies it to its replicas where
its metadata watch delivers it. The broker that took the alter answers once its own
view has it, so an alter sent to the leader is in force at the leader when the answer
arrives; through another broker the tests wait for the effect, as a client must.
Every check is an effect, not a listing: a produce refused or acknowledged, a high
watermark that moves, segment files rolled and deleted on each broker's disk.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.storage.log_manager import partition_directory_name
from broker.storage.segment import LOG_SUFFIX
from tests.support.brokers import BrokerCluster, http_json
from tests.support.replication import ReplicatedTopic, start_cluster, wait_until

pytestmark = pytest.mark.integration

ALL_BROKERS = {1, 2, 3}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerCluster]:
    """One cluster for the module (each test on its own topic); retention runs every 200 ms."""
    started = start_cluster(
        tmp_path_factory.mktemp("config-alters"), env={"HIGHWATER_LOG_RETENTION_CHECK_INTERVAL_MS": "200"}
    )
    yield started
    started.shutdown()


def _alter(topic: ReplicatedTopic, via: int, name: str, value: str) -> None:
    status, reply = http_json("PUT", f"{topic.base(via)}/configs/{name}", {"value": value})
    assert status == 204, reply


def _wait_listed_everywhere(topic: ReplicatedTopic, name: str, value: str) -> None:
    """Until every broker's view holds the altered record (the view applies it to the replicas first)."""
    for broker_id in ALL_BROKERS:

        def listed(b: int = broker_id) -> bool:
            status, reply = http_json("GET", f"{topic.base(b)}/configs/{name}")
            return status == 200 and reply["value"] == value

        wait_until(listed, 10.0, f"broker {broker_id} to list {name}={value}")


def _segment_files(cluster: BrokerCluster, broker_id: int, topic: str) -> list[Path]:
    directory = cluster.brokers[broker_id].data_dir / partition_directory_name(topic, 0)
    return sorted(directory.glob(f"*{LOG_SUFFIX}"))


def _segments_at_or_below(cluster: BrokerCluster, broker_id: int, topic: str, offset: int) -> int:
    """How many of a replica's segments start at or below ``offset``: 1 once none lies wholly below it.

    Followers roll where their own appends cross ``segment.bytes``, so their segment
    bounds need not be the leader's; the one holding ``offset`` stays on every replica.
    """
    return sum(int(path.stem) <= offset for path in _segment_files(cluster, broker_id, topic))


def test_min_insync_replicas_altered_on_a_live_partition_holds_and_releases_acks_all(cluster: BrokerCluster) -> None:
    topic = ReplicatedTopic(cluster, name="min-isr-altered")
    topic.create(min_insync_replicas=3)
    committed = [topic.produce_ok(f"committed-{i}") for i in range(3)]
    leader = topic.describe()["leader_id"]
    stopped, other = sorted(ALL_BROKERS - {leader})
    cluster.brokers[stopped].kill()
    try:
        topic.wait_for_isr({leader, other})

        status, reply = topic.produce("refused")
        assert (status, reply["error"]) == (503, "NOT_ENOUGH_REPLICAS"), reply
        held = topic.produce_ok("held", acks="1")
        assert held == len(committed)
        assert topic.describe()["high_watermark"] == held, "min ISR 3 holds the HW with two replicas in sync"

        _alter(topic, other, "min.insync.replicas", "2")
        wait_until(lambda: topic.describe()["high_watermark"] == held + 1, 10.0, "the held record to become visible")
        released = topic.produce_ok("acks-all-with-min-isr-2")

        _alter(topic, leader, "min.insync.replicas", "3")
        end_before = topic.describe()["log_end_offset"]
        status, reply = topic.produce("refused-again")
        assert (status, reply["error"]) == (503, "NOT_ENOUGH_REPLICAS"), reply
        assert topic.describe()["log_end_offset"] == end_before, "a refused acks=all wrote something"
    finally:
        cluster.brokers[stopped].start()
    topic.wait_for_isr(ALL_BROKERS)
    last = topic.produce_ok("acks-all-with-three")
    assert [offset for offset, _ in topic.read_all()] == [*committed, held, released, last]


def test_segment_and_retention_configs_altered_on_a_live_topic_reach_every_replicas_files(
    cluster: BrokerCluster,
) -> None:
    topic = ReplicatedTopic(cluster, name="retention-altered")
    topic.create()
    for i in range(5):
        topic.produce_ok(f"before-{i}-" + "x" * 300)
    assert all(len(_segment_files(cluster, b, topic.name)) == 1 for b in ALL_BROKERS)

    _alter(topic, 1, "segment.bytes", "1024")
    _wait_listed_everywhere(topic, "segment.bytes", "1024")
    for i in range(12):
        topic.produce_ok(f"after-{i}-" + "x" * 300)
    end = topic.describe()["log_end_offset"]
    topic.wait_for_isr(ALL_BROKERS)
    for broker_id in ALL_BROKERS:
        wait_until(
            lambda b=broker_id: len(_segment_files(cluster, b, topic.name)) >= 4,
            10.0,
            f"broker {broker_id} to roll 1 KiB segments",
        )

    _alter(topic, 2, "retention.ms", "1")
    kept = wait_until(
        lambda: (start := topic.describe()["log_start_offset"]) > 0 and start,
        10.0,
        "the leader's retention to move the log start offset",
    )
    assert kept <= end
    for broker_id in ALL_BROKERS:
        wait_until(
            lambda b=broker_id: _segments_at_or_below(cluster, b, topic.name, kept) == 1,
            10.0,
            f"broker {broker_id} to delete the segments wholly below the log start offset {kept}",
        )
    page = topic.read_page(kept)
    assert page["data"][-1]["value"]["data"].startswith("after-11-")
    status, reply = topic.fetch_page(0)
    assert (status, reply["error"]) == (416, "OFFSET_OUT_OF_RANGE"), reply


def _cluster(cluster: BrokerCluster, broker_id: int) -> str:
    return f"{cluster.brokers[broker_id].url}/v3/clusters/{cluster.cluster_id()}"


def test_a_cluster_wide_default_reaches_new_topics_and_the_live_replicas_that_do_not_override_it(
    cluster: BrokerCluster,
) -> None:
    defaulted = ReplicatedTopic(cluster, name="follows-the-default")
    defaulted.create(min_insync_replicas=2)
    overridden = ReplicatedTopic(cluster, name="keeps-its-own")
    overridden.create(min_insync_replicas=2)
    _alter(overridden, 1, "max.message.bytes", "100000")
    status, reply = http_json("PUT", f"{_cluster(cluster, 2)}/broker-configs/message.max.bytes", {"value": "400"})
    assert status == 204, reply
    try:
        for broker_id in ALL_BROKERS:

            def applied(b: int = broker_id) -> bool:
                status, reply = http_json("GET", f"{_cluster(cluster, b)}/brokers/{b}/configs/message.max.bytes")
                return status == 200 and reply["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"

            wait_until(applied, 10.0, f"broker {broker_id} to apply message.max.bytes=400")
            status, reply = defaulted.produce("x" * 500, via=broker_id)
            assert (status, reply["error"]) == (413, "MESSAGE_TOO_LARGE"), reply
            assert overridden.produce("x" * 500, via=broker_id)[0] == 200, "a topic override must win"
        status, listing = http_json("GET", f"{_cluster(cluster, 3)}/broker-configs")
        assert status == 200, listing
        assert [(c["name"], c["value"], c["source"]) for c in listing["data"]] == [
            ("message.max.bytes", "400", "DYNAMIC_DEFAULT_BROKER_CONFIG")
        ]
        status, config = http_json("GET", f"{defaulted.base(3)}/configs/max.message.bytes")
        assert (status, config["value"], config["source"]) == (200, "400", "DYNAMIC_DEFAULT_BROKER_CONFIG"), config

        status, reply = http_json("PUT", f"{_cluster(cluster, 1)}/broker-configs/num.partitions", {"value": "3"})
        assert status == 204, reply
        created = {"topic_name": "counted-by-the-default", "replication_factor": 1}
        status, topic = http_json("POST", f"{_cluster(cluster, 1)}/topics", created)
        assert (status, topic["partitions_count"]) == (201, 3), topic
    finally:
        alter = {"data": [{"name": n, "operation": "DELETE"} for n in ("message.max.bytes", "num.partitions")]}
        status, reply = http_json("POST", f"{_cluster(cluster, 3)}/broker-configs:alter", alter)
        assert status == 204, reply
    for broker_id in ALL_BROKERS:
        wait_until(
            lambda b=broker_id: defaulted.produce("x" * 500, via=b)[0] == 200,
            10.0,
            f"broker {broker_id} to take the static default back",
        )
