"""The console's routes on one real broker, its samples taken by calling the samplers directly.

The timers are set to an hour so that nothing samples behind the test's back; the
test takes each sample itself (what the timer would do), so no sleep stands in for
synchronisation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.clock import wall_clock_ms
from broker.node.broker_node import BrokerNode
from broker.server.app import create_app
from tests.unit.server.conftest import Api, broker_settings, error_of, wait_until_ready
from tests.unit.server.group_offsets import commit

HOUR_MS = str(3_600_000)


@pytest.fixture
async def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    monkeypatch.setenv("HIGHWATER_CONSOLE__LAG_SAMPLE_INTERVAL_MS", HOUR_MS)
    monkeypatch.setenv("HIGHWATER_CONSOLE__ACTIVITY_SAMPLE_INTERVAL_MS", HOUR_MS)
    monkeypatch.setenv("HIGHWATER_CONSOLE__LAG_HISTORY_SAMPLES", "3")
    node = await BrokerNode.start(broker_settings(tmp_path / "data", offsets_topic_num_partitions=1))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield Api(client, node)
    finally:
        await node.stop()


async def get(api: Api, path: str) -> dict:
    response = await api.client.get(path)
    assert response.status == 200, await response.text()
    return await response.json()


async def test_produce_and_fetch_rates_come_from_the_sample_not_the_request(api: Api) -> None:
    await api.create_topic("rates")
    await api.produce("rates", {"value": {"data": "a"}})
    activity = api.node.console.activity
    activity.sample(api.node.console.traffic, 1_000)
    for value in range(4):
        await api.produce("rates", {"value": {"data": value}})
    assert len(await api.values("rates")) == 5
    before = await get(api, f"{api.cluster}/activity")
    assert [t["produce_records_per_s"] for t in before["topics"] if t["topic_name"] == "rates"] == [0.0]
    activity.sample(api.node.console.traffic, 3_000)
    body = await get(api, f"{api.cluster}/activity")
    assert body["kind"] == "KafkaClusterActivity"
    assert body["interval_ms"] == int(HOUR_MS)
    (topic,) = [t for t in body["topics"] if t["topic_name"] == "rates"]
    assert topic["produce_records_per_s"] == 2.0
    assert topic["fetch_records_per_s"] == 2.5
    assert topic["produce_bytes_per_s"] > 0 and topic["fetch_bytes_per_s"] > 0
    assert [p["time_ms"] for p in topic["history"]] == [int(HOUR_MS)]
    assert body["brokers"] == [
        {
            "broker_id": 1,
            "reachable": True,
            "produce_records_per_s": 2.0,
            "produce_bytes_per_s": topic["produce_bytes_per_s"],
            "fetch_records_per_s": 2.5,
            "fetch_bytes_per_s": topic["fetch_bytes_per_s"],
        }
    ]
    assert (body["under_replicated_partitions"], body["under_min_isr_partitions"], body["offline_partitions"]) == (
        0,
        0,
        0,
    )


async def test_replica_offsets_show_each_replicas_leo_the_hw_and_the_log_start(api: Api) -> None:
    await api.create_topic("offsets", partitions=2)
    for value in range(3):
        await api.produce("offsets", {"partition_id": 1, "value": {"data": value}})
    body = await get(api, f"{api.topic('offsets')}/replica-offsets")
    assert body["kind"] == "KafkaTopicReplicaOffsets"
    assert [p["partition_id"] for p in body["partitions"]] == [0, 1]
    second = body["partitions"][1]
    assert (second["leader_id"], second["isr"], second["reachable"]) == (1, [1], True)
    assert (second["log_start_offset"], second["high_watermark"]) == (0, 3)
    assert second["replicas"] == [{"broker_id": 1, "log_end_offset": 3, "in_sync": True, "caught_up_ms_ago": 0}]
    await error_of(await api.client.get(f"{api.topic('absent')}/replica-offsets"), 404)
    log = api.node.replicas.local_partition("offsets", 1)
    assert log is not None
    assert (body["partitions"][0]["size_bytes"], second["size_bytes"]) == (0, log.log.size_bytes)
    assert second["size_bytes"] > 0


async def test_every_topics_replica_offsets_come_in_one_answer_equal_to_each_topics(api: Api) -> None:
    for name, partitions in (("beta", 1), ("alpha", 2)):
        await api.create_topic(name, partitions=partitions)
        await api.produce(name, {"partition_id": 0, "value": {"data": name}})
    body = await get(api, f"{api.cluster}/replica-offsets")
    assert (body["kind"], body["cluster_id"]) == ("KafkaClusterReplicaOffsets", api.node.cluster_id)
    names = [topic["topic_name"] for topic in body["topics"]]
    assert names == sorted(names) and {"alpha", "beta"} <= set(names)
    for topic in body["topics"]:
        alone = await get(api, f"{api.topic(topic['topic_name'])}/replica-offsets")
        assert topic["partitions"] == alone["partitions"], topic["topic_name"]
    (alpha,) = [topic for topic in body["topics"] if topic["topic_name"] == "alpha"]
    assert [(p["partition_id"], p["high_watermark"]) for p in alpha["partitions"]] == [(0, 1), (1, 0)]


async def test_isr_events_of_a_topic_without_changes_are_empty_and_of_an_unknown_topic_404(api: Api) -> None:
    await api.create_topic("calm")
    body = await get(api, f"{api.topic('calm')}/isr-events")
    assert body == {
        "kind": "KafkaTopicIsrEvents",
        "cluster_id": api.node.cluster_id,
        "topic_name": "calm",
        "events": [],
    }
    await error_of(await api.client.get(f"{api.topic('absent')}/isr-events"), 404)


async def test_lag_history_rises_with_the_high_watermark_and_falls_with_commits(api: Api) -> None:
    await api.create_topic("lagging")
    path = f"{api.cluster}/consumer-groups/readers/lag-history"
    await error_of(await api.client.get(path), 404)
    for value in range(4):
        await api.produce("lagging", {"value": {"data": value}})
    assert (await commit(api, "readers", "lagging", 1)).status == 200
    await api.node.console.sample_lag()
    for value in range(4):
        await api.produce("lagging", {"value": {"data": value}})
    await api.node.console.sample_lag()
    assert (await commit(api, "readers", "lagging", 8)).status == 200
    await api.node.console.sample_lag()
    await api.node.console.sample_lag()
    body = await get(api, path)
    assert (body["kind"], body["consumer_group_id"], body["capacity"]) == ("KafkaConsumerGroupLagHistory", "readers", 3)
    assert [s["total_lag"] for s in body["samples"]] == [7, 0, 0]
    first = body["samples"][0]
    assert first["time_ms"] <= wall_clock_ms()
    assert first["partitions"][0] | {"lag_ms": None} == {
        "topic_name": "lagging",
        "partition_id": 0,
        "committed_offset": 1,
        "high_watermark": 8,
        "lag": 7,
        "lag_ms": None,
    }
    assert first["partitions"][0]["lag_ms"] >= 0
    assert body["samples"][-1]["max_lag_ms"] == 0


async def test_a_json_read_counts_the_records_it_answers_not_the_rest_of_the_batch_it_read(api: Api) -> None:
    await api.create_topic("paged")
    entries = [{"value": {"data": value}} for value in range(5)]
    response = await api.client.post(f"{api.topic('paged')}/records:batch", json={"entries": entries})
    assert response.status in (200, 207), await response.text()
    page = await api.read("paged", offset=1, max_records=2)
    assert page["next_offset"] == 3
    assert api.node.console.traffic.topics["paged"].fetch_records == 2
    await api.read("paged", offset=3)
    assert api.node.console.traffic.topics["paged"].fetch_records == 4
