"""Refusals a route gives are the ones its OpenAPI operation documents, with the ``Error`` body.

Clients generated from ``/openapi.json`` (and the schemathesis fuzz) learn the answers a
call may get from the document; a status the broker answers but the document leaves out
is one such a client does not expect. One broker in this process, behind the real app.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.node.broker_node import BrokerNode
from broker.server.app import create_app
from tests.rest_spec import models as m
from tests.rest_spec.models import validate
from tests.unit.server.conftest import broker_settings, wait_until_ready

GROUP_PATH = "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[TestClient, str]]:
    node = await BrokerNode.start(broker_settings(tmp_path / "data", offsets_topic_num_partitions=1))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield client, node.cluster_id
    finally:
        await node.stop()


async def test_deleting_a_group_with_members_is_the_documented_409_and_deletes_nothing(
    client: tuple[TestClient, str],
) -> None:
    http, cluster_id = client
    topic = {"topic_name": "t", "partitions_count": 1, "replication_factor": 1}
    assert (await http.post(f"/v3/clusters/{cluster_id}/topics", json=topic)).status == 201
    group = GROUP_PATH.format(cluster_id=cluster_id, consumer_group_id="g")
    joined = await http.post(f"{group}/consumers/m:heartbeat", json={"member_epoch": 0, "subscribed_topics": ["t"]})
    assert joined.status == 200, await joined.text()

    refused = await http.delete(group)
    assert refused.status == 409
    error = validate(m.Error, await refused.read())
    assert error.error_code == 40912
    assert (await http.get(f"{group}/consumers/m")).status == 200

    document = await (await http.get("/openapi.json")).json()
    answers = document["paths"][GROUP_PATH]["delete"]["responses"]
    assert answers["409"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    assert "NON_EMPTY_GROUP" in answers["409"]["description"]
