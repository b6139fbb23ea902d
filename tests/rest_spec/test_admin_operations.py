"""Every admin operation's answers, from a real broker, validated against the spec's schemas (``models_admin``).

One broker in this process, behind the real app over loopback: each operation is
called as a client would call it and its JSON answer validated with the model named
after the spec's schema for that answer; error answers with the spec's ``Error``.
``PATCH /topics/{t}`` answers the topic resource, whose shape the topics operations'
conformance pins, so only its status is checked here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pydantic import BaseModel

from broker.node.broker_node import BrokerNode
from broker.server.app import create_app
from tests.rest_spec.models_admin import (
    CONFIG_SOURCES,
    BrokerConfigData,
    BrokerConfigDataList,
    ClusterConfigDataList,
    ConsumerAssignmentData,
    ConsumerAssignmentDataList,
    Error,
    ReassignmentDataList,
    ReplicaData,
    ReplicaDataList,
    TopicConfigData,
    TopicConfigDataList,
)
from tests.unit.server.conftest import broker_settings, wait_until_ready


class Spec:
    def __init__(self, client: TestClient, node: BrokerNode) -> None:
        self.client = client
        self.cluster = f"/v3/clusters/{node.cluster_id}"

    async def call(self, method: str, path: str, status: int, json: Any = None) -> Any:
        response = await self.client.request(method, f"{self.cluster}{path}", json=json)
        assert response.status == status, await response.text()
        if status == 204:
            assert await response.read() == b""
            return None
        return await response.json()

    async def answer(self, model: type[BaseModel], method: str, path: str, status: int = 200, json: Any = None) -> Any:
        return model.model_validate(await self.call(method, path, status, json))


@pytest.fixture
async def spec(tmp_path: Path) -> AsyncIterator[Spec]:
    node = await BrokerNode.start(broker_settings(tmp_path / "data", offsets_topic_num_partitions=1))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            spec = Spec(client, node)
            topic = {"topic_name": "t", "partitions_count": 1, "replication_factor": 1}
            await spec.call("POST", "/topics", 201, topic)
            yield spec
    finally:
        await node.stop()


async def test_topic_config_operations_answer_the_specs_shapes(spec: Spec) -> None:
    listing = await spec.answer(TopicConfigDataList, "GET", "/topics/t/configs")
    assert {config.source for config in listing.data} <= CONFIG_SOURCES
    assert all(s.source in CONFIG_SOURCES for config in listing.data for s in config.synonyms)
    everything = await spec.answer(TopicConfigDataList, "GET", "/topics/-/configs")
    assert {config.topic_name for config in everything.data} >= {"t"}
    await spec.call("PUT", "/topics/t/configs/compression.type", 204, {"value": "gzip"})
    one = await spec.answer(TopicConfigData, "GET", "/topics/t/configs/compression.type")
    assert (one.value, one.source, one.is_default) == ("gzip", "DYNAMIC_TOPIC_CONFIG", False)
    await spec.call("DELETE", "/topics/t/configs/compression.type", 204)
    alter = {"data": [{"name": "max.message.bytes", "value": "9000"}], "validate_only": True}
    await spec.call("POST", "/topics/t/configs:alter", 204, alter)
    await spec.call(
        "POST", "/topics/t/configs:alter", 204, {"data": [{"name": "compression.type", "operation": "DELETE"}]}
    )
    await spec.answer(Error, "PUT", "/topics/t/configs/retention.ms", 400, {"value": "1"})
    await spec.answer(Error, "GET", "/topics/t/configs/no.such.config", 404)
    await spec.answer(Error, "GET", "/topics/absent/configs", 404)


async def test_broker_and_cluster_config_operations_answer_the_specs_shapes(spec: Spec) -> None:
    listing = await spec.answer(BrokerConfigDataList, "GET", "/brokers/1/configs")
    assert {config.source for config in listing.data} <= CONFIG_SOURCES
    await spec.answer(BrokerConfigDataList, "GET", "/brokers/-/configs")
    await spec.answer(BrokerConfigData, "GET", "/brokers/1/configs/num.partitions")
    await spec.answer(Error, "PUT", "/brokers/1/configs/num.partitions", 400, {"value": "3"})
    await spec.answer(
        Error, "POST", "/brokers/1/configs:alter", 400, {"data": [{"name": "num.partitions", "value": "3"}]}
    )
    assert (await spec.answer(ClusterConfigDataList, "GET", "/broker-configs")).data == []
    await spec.answer(Error, "GET", "/broker-configs/num.partitions", 404)
    await spec.answer(Error, "POST", "/broker-configs:alter", 400, {"data": [{"name": "num.partitions", "value": "3"}]})


async def test_replica_and_reassignment_operations_answer_the_specs_shapes(spec: Spec) -> None:
    replicas = await spec.answer(ReplicaDataList, "GET", "/topics/t/partitions/0/replicas")
    assert [(r.broker_id, r.is_leader, r.is_in_sync) for r in replicas.data] == [(1, True, True)]
    await spec.answer(ReplicaData, "GET", "/topics/t/partitions/0/replicas/1")
    by_broker = await spec.answer(ReplicaDataList, "GET", "/brokers/1/partition-replicas")
    assert ("t", 0) in {(r.topic_name, r.partition_id) for r in by_broker.data}
    await spec.answer(Error, "GET", "/topics/t/partitions/0/replicas/2", 404)
    assert (await spec.answer(ReassignmentDataList, "GET", "/topics/-/partitions/-/reassignment")).data == []
    assert (await spec.answer(ReassignmentDataList, "GET", "/topics/t/partitions/-/reassignment")).data == []
    await spec.answer(Error, "GET", "/topics/t/partitions/0/reassignment", 404)


async def test_partition_count_and_consumer_assignment_operations(spec: Spec) -> None:
    await spec.call("PATCH", "/topics/t", 200, {"partitions_count": 2})
    await spec.answer(Error, "PATCH", "/topics/t", 400, {"partitions_count": 2})
    heartbeat = {"member_epoch": 0, "subscribed_topics": ["t"]}
    await spec.call("POST", "/consumer-groups/g/consumers/m:heartbeat", 200, heartbeat)
    listing = await spec.answer(ConsumerAssignmentDataList, "GET", "/consumer-groups/g/consumers/m/assignments")
    assert [(a.topic_name, a.partition_id) for a in listing.data] == [("t", 0), ("t", 1)]
    one = await spec.answer(ConsumerAssignmentData, "GET", "/consumer-groups/g/consumers/m/assignments/t/partitions/1")
    assert one.lag.related.endswith("/consumer-groups/g/lags/t/partitions/1")
    await spec.answer(Error, "GET", "/consumer-groups/g/consumers/absent/assignments", 404)
