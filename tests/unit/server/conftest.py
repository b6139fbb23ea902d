"""A real ``BrokerNode`` on a temporary data dir behind the real app, over loopback sockets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from broker.node.broker_node import BrokerNode
from broker.server.app import create_app
from config.broker import BrokerSettings

MAX_REQUEST_BYTES = 256 * 1024


@dataclass
class Api:
    """A test client that knows the cluster id and builds REST Proxy v3 paths."""

    client: TestClient[web.Request, web.Application]
    node: BrokerNode

    @property
    def cluster(self) -> str:
        return f"/v3/clusters/{self.node.cluster_id}"

    def topic(self, name: str) -> str:
        return f"{self.cluster}/topics/{name}"

    def partition(self, name: str, partition: int) -> str:
        return f"{self.topic(name)}/partitions/{partition}"

    async def create_topic(self, name: str, partitions: int = 1, **configs: str) -> dict[str, Any]:
        body = {
            "topic_name": name,
            "partitions_count": partitions,
            "replication_factor": 1,
            "configs": [{"name": key.replace("_", "."), "value": value} for key, value in configs.items()],
        }
        response = await self.client.post(f"{self.cluster}/topics", json=body)
        assert response.status == 201, await response.text()
        return await response.json()

    async def produce(self, topic: str, record: dict[str, Any], **query: str) -> dict[str, Any]:
        response = await self.client.post(f"{self.topic(topic)}/records", json=record, params=query)
        assert response.status == 200, await response.text()
        return await response.json()

    async def read(self, topic: str, partition: int = 0, **query: Any) -> dict[str, Any]:
        params = {"format": "string", **{key: str(value) for key, value in query.items()}}
        response = await self.client.get(f"{self.partition(topic, partition)}/records", params=params)
        assert response.status == 200, await response.text()
        return await response.json()

    async def values(self, topic: str, partition: int = 0) -> list[Any]:
        """Every visible value of a partition, from the log start (the data-intact check)."""
        body = await self.read(topic, partition, offset=0, max_records=100_000)
        return [record["value"]["data"] if record["value"] else None for record in body["data"]]


async def error_of(response, status: int) -> dict[str, Any]:
    """Assert a JSON error answer with ``status`` and return its body."""
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"
    body = await response.json()
    assert set(body) >= {"error_code", "error", "message", "retriable"}
    assert "Traceback" not in body["message"]
    return body


def broker_settings(data_dir: Path, **overrides: Any) -> BrokerSettings:
    """One broker with a small request limit; its sqlite metadata store sits next to its data dir."""
    store_path = data_dir.resolve().parent / f"{data_dir.name}-metadata.db"
    defaults: dict[str, Any] = {
        "node_id": 1,
        "host": "127.0.0.1",
        "port": 0,
        "data_dir": data_dir,
        "metadata_store": f"sqlite://{store_path}",
        "max_request_bytes": MAX_REQUEST_BYTES,
    }
    return BrokerSettings(**{**defaults, **overrides})


@pytest.fixture
async def node(tmp_path: Path) -> AsyncIterator[BrokerNode]:
    started = await BrokerNode.start(broker_settings(tmp_path / "data"))
    yield started
    await started.stop()


async def wait_until_ready(client: TestClient, timeout_s: float = 10.0) -> None:
    """Poll ``/readyz`` the way an orchestrator would: the broker joins its cluster asynchronously."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while (await client.get("/readyz")).status != 200:
        assert asyncio.get_running_loop().time() < deadline, "broker never became ready"
        await asyncio.sleep(0.02)


@pytest.fixture
async def api(node: BrokerNode) -> AsyncIterator[Api]:
    async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
        await wait_until_ready(client)
        yield Api(client, node)


@pytest.fixture
async def group_api(tmp_path: Path) -> AsyncIterator[Api]:
    """A broker whose ``__consumer_offsets`` has one partition, so consumer-group requests start fast."""
    node = await BrokerNode.start(broker_settings(tmp_path / "data", offsets_topic_num_partitions=1))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield Api(client, node)
    finally:
        await node.stop()
