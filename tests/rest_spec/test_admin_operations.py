"""The admin operations' refusals and dry runs, on one broker in this process, held to the operations table.

The conformance walk (``test_conformance``) drives every admin operation's success on a
live cluster; these are the answers it does not reach, quicker on one broker behind the
real app over loopback: each call is named by its spec operation, its status must be one
the table lists for it, and its body is validated strictly with the table's model for
that status (the spec's ``Error`` for a refusal). Each refusal is checked to have
changed nothing.
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
from tests.rest_spec import models as m
from tests.rest_spec.models import validate
from tests.rest_spec.operations import BY_NAME, SPEC_PREFIX
from tests.unit.server.conftest import broker_settings, wait_until_ready


class Spec:
    def __init__(self, client: TestClient, node: BrokerNode) -> None:
        self.client = client
        self.cluster_id = node.cluster_id

    async def call(self, name: str, params: dict[str, Any], expect: int, body: Any = None) -> BaseModel | None:
        operation = BY_NAME[name]
        path = SPEC_PREFIX + operation.path.format(cluster_id=self.cluster_id, **params)
        response = await self.client.request(operation.method, path, json=body)
        raw = await response.read()
        assert response.status == expect, raw
        model = operation.model_for(expect)
        return validate(model, raw) if model is not None else None

    async def error(self, name: str, params: dict[str, Any], expect: int, body: Any = None) -> m.Error:
        answer = await self.call(name, params, expect, body)
        assert isinstance(answer, m.Error)
        return answer

    async def config(self, topic: str, name: str) -> m.TopicConfigData:
        answer = await self.call("getKafkaTopicConfig", {"topic_name": topic, "name": name}, 200)
        assert isinstance(answer, m.TopicConfigData)
        return answer


@pytest.fixture
async def spec(tmp_path: Path) -> AsyncIterator[Spec]:
    node = await BrokerNode.start(broker_settings(tmp_path / "data", offsets_topic_num_partitions=1))
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            spec = Spec(client, node)
            await spec.call("createKafkaTopic", {}, 201, {"topic_name": "t", "partitions_count": 1})
            yield spec
    finally:
        await node.stop()


async def test_a_validate_only_alter_and_a_refused_one_change_nothing(spec: Spec) -> None:
    before = await spec.config("t", "max.message.bytes")
    dry = {"data": [{"name": "max.message.bytes", "value": "9000"}], "validate_only": True}
    await spec.call("updateKafkaTopicConfigBatch", {"topic_name": "t"}, 204, dry)
    twice = {"data": [{"name": "max.message.bytes", "value": "9000"}, {"name": "max.message.bytes", "value": "1"}]}
    assert (await spec.error("updateKafkaTopicConfigBatch", {"topic_name": "t"}, 400, twice)).error_code == 40005
    no_value = {"data": [{"name": "max.message.bytes"}]}
    assert (await spec.error("updateKafkaTopicConfigBatch", {"topic_name": "t"}, 400, no_value)).error_code == 40005
    params = {"topic_name": "t", "name": "retention.ms"}
    assert (await spec.error("updateKafkaTopicConfig", params, 400, {"value": "-2"})).error_code == 40005
    assert (await spec.config("t", "max.message.bytes")).value == before.value
    assert (await spec.config("t", "retention.ms")).source == "DEFAULT_CONFIG"


async def test_a_bad_compression_type_is_refused_and_a_good_one_is_listed(spec: Spec) -> None:
    params = {"topic_name": "t", "name": "compression.type"}
    assert (await spec.error("updateKafkaTopicConfig", params, 400, {"value": "brotli"})).error_code == 40005
    assert (await spec.config("t", "compression.type")).value == "producer"
    await spec.call("updateKafkaTopicConfig", params, 204, {"value": "gzip"})
    config = await spec.config("t", "compression.type")
    assert (config.value, config.source, config.is_read_only) == ("gzip", "DYNAMIC_TOPIC_CONFIG", False)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("getKafkaTopicConfig", {"topic_name": "t", "name": "no.such.config"}),
        ("listKafkaTopicConfigs", {"topic_name": "absent"}),
        ("getKafkaBrokerConfig", {"broker_id": 1, "name": "no.such.config"}),
        ("listKafkaBrokerConfigs", {"broker_id": 2}),
        ("getKafkaReplica", {"topic_name": "t", "partition_id": 0, "broker_id": 2}),
        ("listKafkaReplicas", {"topic_name": "t", "partition_id": 5}),
        ("searchKafkaReassignmentsByTopic", {"topic_name": "absent"}),
        ("listKafkaConsumerAssignment", {"consumer_group_id": "absent", "consumer_id": "m"}),
    ],
)
async def test_an_unknown_resource_is_404_with_the_error_body(spec: Spec, name: str, params: dict) -> None:
    await spec.error(name, params, 404)


async def test_an_unknown_broker_config_is_refused_before_read_only(spec: Spec) -> None:
    batch = {"data": [{"name": "no.such.config", "value": "1"}]}
    refused = await spec.error("updateKafkaBrokerConfigBatch", {"broker_id": 1}, 400, batch)
    assert refused.error_code == 40005 and "not a broker config" in (refused.message or "")


async def test_a_partition_count_that_does_not_grow_is_refused(spec: Spec) -> None:
    for count in (1, 0):
        refused = await spec.error(
            "updatePartitionCountKafkaTopic", {"topic_name": "t"}, 400, {"partitions_count": count}
        )
        assert refused.error_code == 40003
    topic = await spec.call("getKafkaTopic", {"topic_name": "t"}, 200)
    assert isinstance(topic, m.TopicData) and topic.partitions_count == 1


async def test_a_member_is_not_assigned_a_partition_it_does_not_own(spec: Spec) -> None:
    await spec.call("updatePartitionCountKafkaTopic", {"topic_name": "t"}, 200, {"partitions_count": 2})
    heartbeat = {"member_epoch": 0, "subscribed_topics": ["t"]}
    response = await spec.client.post(
        f"/v3/clusters/{spec.cluster_id}/consumer-groups/g/consumers/m:heartbeat", json=heartbeat
    )
    assert response.status == 200, await response.text()
    params = {"consumer_group_id": "g", "consumer_id": "m"}
    listed = await spec.call("listKafkaConsumerAssignment", params, 200)
    assert isinstance(listed, m.ConsumerAssignmentDataList)
    assert [(a.topic_name, a.partition_id) for a in listed.data] == [("t", 0), ("t", 1)]
    await spec.error("getKafkaConsumerAssignment", {**params, "topic_name": "t", "partition_id": 2}, 404)
    await spec.error("listKafkaConsumerAssignment", {**params, "consumer_id": "absent"}, 404)
