"""``min.insync.replicas`` above the replication factor is refused, not silently capped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.node.broker_node import BrokerNode
from broker.server.app import create_app
from config.topic import TopicDefaults
from tests.unit.server.conftest import Api, broker_settings, error_of, wait_until_ready


def create_body(name: str, replication_factor: int, **configs: str) -> dict:
    return {
        "topic_name": name,
        "partitions_count": 1,
        "replication_factor": replication_factor,
        "configs": [{"name": key, "value": value} for key, value in configs.items()],
    }


@pytest.mark.parametrize("spelling", ["min.insync.replicas", "min_insync_replicas"])
async def test_an_explicit_min_isr_above_the_replication_factor_is_refused(api: Api, spelling: str) -> None:
    response = await api.client.post(f"{api.cluster}/topics", json=create_body("t", 1, **{spelling: "2"}))
    error = await error_of(response, 400)
    assert error["error"] == "INVALID_CONFIG"
    assert error["config"] == "min.insync.replicas"
    assert "min.insync.replicas: 2 is greater than the replication factor 1" in error["message"]
    assert (error["min_insync_replicas"], error["replication_factor"]) == (2, 1)
    assert "t" not in api.node.view.topics


async def test_min_isr_equal_to_the_replication_factor_is_accepted(api: Api) -> None:
    response = await api.client.post(f"{api.cluster}/topics", json=create_body("t", 1, **{"min.insync.replicas": "1"}))
    assert response.status == 201, await response.text()


@pytest.fixture
async def min_isr_2_api(tmp_path: Path) -> AsyncIterator[Api]:
    """A broker whose topic default is min.insync.replicas=2."""
    settings = broker_settings(tmp_path / "data", topic_defaults=TopicDefaults(min_insync_replicas=2))
    node = await BrokerNode.start(settings)
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield Api(client, node)
    finally:
        await node.stop()


async def test_a_default_min_isr_above_the_replication_factor_counts_as_the_replication_factor(
    min_isr_2_api: Api,
) -> None:
    """The creator did not ask for 2: the single replica is enough (Kafka's effectiveMinIsr), never under min ISR."""
    api = min_isr_2_api
    response = await api.client.post(f"{api.cluster}/topics", json=create_body("single", 1))
    assert response.status == 201, await response.text()
    await api.produce("single", {"value": {"data": 1}}, acks="all")
    text = await (await api.client.get("/metrics")).text()
    assert 'highwater_partition_isr_size{partition="0",topic="single"} 1.0' in text
    assert "highwater_under_min_isr_partitions 0.0" in text
    assert "highwater_under_replicated_partitions 0.0" in text
