"""A broker for tests that use consumer groups: ``__consumer_offsets`` has one partition, so groups start fast."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.node import BrokerNode
from broker.server.app import create_app
from tests.unit.server.conftest import Api, broker_settings, wait_until_ready


@pytest.fixture
async def group_api(tmp_path: Path) -> AsyncIterator[Api]:
    node = await BrokerNode.start(broker_settings(tmp_path / "data", offsets_topic_num_partitions=1))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield Api(client, node)
    finally:
        await node.stop()


async def commit(api: Api, group: str, topic: str, offset: int, partition: int = 0):
    """POST one committed offset; returns the response for the caller to check."""
    body = {"offsets": [{"topic_name": topic, "partition_id": partition, "offset": offset}]}
    return await api.client.post(f"{api.cluster}/consumer-groups/{group}/offsets", json=body)


async def committed(api: Api, group: str) -> dict[tuple[str, int], int]:
    response = await api.client.get(f"{api.cluster}/consumer-groups/{group}/offsets")
    assert response.status == 200, await response.text()
    return {(item["topic_name"], item["partition_id"]): item["offset"] for item in (await response.json())["data"]}
