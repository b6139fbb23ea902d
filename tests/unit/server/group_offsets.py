"""Committing and reading a group's offsets over the API, for tests that run against ``group_api``."""

from __future__ import annotations

from aiohttp import ClientResponse

from tests.unit.server.conftest import Api


async def commit(api: Api, group: str, topic: str, offset: int, partition: int = 0) -> ClientResponse:
    """POST one committed offset; the caller checks the answer."""
    body = {"offsets": [{"topic_name": topic, "partition_id": partition, "offset": offset}]}
    return await api.client.post(f"{api.cluster}/consumer-groups/{group}/offsets", json=body)


async def committed(api: Api, group: str) -> dict[tuple[str, int], int]:
    response = await api.client.get(f"{api.cluster}/consumer-groups/{group}/offsets")
    assert response.status == 200, await response.text()
    return {(item["topic_name"], item["partition_id"]): item["offset"] for item in (await response.json())["data"]}
