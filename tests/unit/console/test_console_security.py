"""The console's routes with authentication on: DESCRIBE decides, and lists keep only what may be described.

One real broker with ``basic`` authentication; the viewer may DESCRIBE the cluster,
the group and the topic ``shown`` but not the topic ``hidden``, to which the same
group has also committed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.cluster.security_store import SecurityStore
from broker.node.broker_node import BrokerNode
from broker.security.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from broker.security.scram import new_credential
from broker.server.app import create_app
from tests.unit.server.conftest import Api, broker_settings, wait_until_ready

PASSWORD = "viewer-pw"
ADMIN = {"Authorization": aiohttp.encode_basic_auth("admin", PASSWORD)}
VIEWER = {"Authorization": aiohttp.encode_basic_auth("viewer", PASSWORD)}
HOUR_MS = str(3_600_000)


@pytest.fixture
async def secured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    monkeypatch.setenv("HIGHWATER_CONSOLE__LAG_SAMPLE_INTERVAL_MS", HOUR_MS)
    monkeypatch.setenv("HIGHWATER_CONSOLE__ACTIVITY_SAMPLE_INTERVAL_MS", HOUR_MS)
    settings = broker_settings(
        tmp_path / "data",
        offsets_topic_num_partitions=1,
        security={"authentication": "basic", "super_users": ["admin"]},
    )
    node = await BrokerNode.start(settings)
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            store = SecurityStore(node.store)
            for user in ("admin", "viewer"):
                await store.put_user(user, new_credential(PASSWORD))
            for resource_type, name in (
                (ResourceType.CLUSTER, "kafka-cluster"),
                (ResourceType.GROUP, "readers"),
                (ResourceType.TOPIC, "shown"),
            ):
                await store.add_acl(
                    AclBinding(
                        resource_type,
                        name,
                        PatternType.LITERAL,
                        "User:viewer",
                        "*",
                        AclOperation.DESCRIBE,
                        AclPermission.ALLOW,
                    )
                )
            await node.security.catch_up()
            yield Api(client, node)
    finally:
        await node.stop()


async def as_admin(api: Api, method: str, path: str, body: dict) -> None:
    response = await api.client.request(method, path, json=body, headers=ADMIN)
    assert response.status in (200, 201), await response.text()


async def viewer_get(api: Api, path: str, status: int = 200) -> dict:
    response = await api.client.get(path, headers=VIEWER)
    assert response.status == status, await response.text()
    return await response.json()


async def test_lists_keep_only_the_topics_the_viewer_may_describe(secured: Api) -> None:
    api = secured
    traffic = api.node.console.traffic
    api.node.console.activity.sample(traffic, 0)
    for topic in ("shown", "hidden"):
        await as_admin(api, "POST", f"{api.cluster}/topics", {"topic_name": topic, "partitions_count": 1})
        for value in range(3):
            await as_admin(api, "POST", f"{api.topic(topic)}/records", {"value": {"data": value}})
    offsets = [{"topic_name": topic, "partition_id": 0, "offset": 1} for topic in ("shown", "hidden")]
    await as_admin(api, "POST", f"{api.cluster}/consumer-groups/readers/offsets", {"offsets": offsets})
    await api.node.console.sample_lag()
    api.node.console.activity.sample(traffic, 1000)

    history = await viewer_get(api, f"{api.cluster}/consumer-groups/readers/lag-history")
    (sample,) = history["samples"]
    assert [p["topic_name"] for p in sample["partitions"]] == ["shown"]
    assert sample["total_lag"] == 2

    activity = await viewer_get(api, f"{api.cluster}/activity")
    assert [t["topic_name"] for t in activity["topics"]] == ["shown"]
    assert activity["topics"][0]["produce_records_per_s"] == 3.0
    assert activity["brokers"][0]["produce_records_per_s"] == 6.0

    await viewer_get(api, f"{api.topic('shown')}/isr-events")
    shown = await viewer_get(api, f"{api.topic('shown')}/replica-offsets")
    every = await viewer_get(api, f"{api.cluster}/replica-offsets")
    assert every["topics"] == [{"topic_name": "shown", "partitions": shown["partitions"]}]
    for route in ("isr-events", "replica-offsets"):
        refused = await viewer_get(api, f"{api.topic('hidden')}/{route}", 403)
        assert refused["error"] == "TOPIC_AUTHORIZATION_FAILED"
    refused = await viewer_get(api, f"{api.cluster}/consumer-groups/others/lag-history", 403)
    assert refused["error"] == "GROUP_AUTHORIZATION_FAILED"
