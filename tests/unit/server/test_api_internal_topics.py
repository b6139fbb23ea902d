"""``__consumer_offsets`` belongs to the broker: clients cannot create, append to or delete it."""

from __future__ import annotations

import pytest

from broker.acks import Acks
from broker.errors import InvalidTopic
from broker.record.codec import RecordInput, encode_batch
from broker.server.routes_produce import PRODUCER_KEY
from broker.topics.policy import OFFSETS_TOPIC
from tests.unit.server.conftest import Api, error_of
from tests.unit.server.group_offsets import commit, committed


def offsets_log_end(api: Api) -> int:
    return api.node.replicas.partitions[(OFFSETS_TOPIC, 0)].log_end_offset


async def with_a_commit(api: Api) -> int:
    """Create a topic and a group with a committed offset; return the offsets log's end."""
    await api.create_topic("t")
    await api.produce("t", {"value": {"data": 1}})
    assert (await commit(api, "g", "t", 1)).status == 200
    return offsets_log_end(api)


@pytest.mark.parametrize("acks", ["all", "0"])
@pytest.mark.parametrize(
    ("path", "content_type", "body"),
    [
        ("/records", "application/json", b'{"key": {"data": "g"}, "value": {"data": "garbage"}}'),
        ("/records:batch", "application/json", b'{"entries": [{"value": {"data": "garbage"}}]}'),
        (
            "/partitions/0/batches",
            "application/vnd.kafka.batch.v2",
            encode_batch([RecordInput(b"g", b"garbage", [], 1000)]),
        ),
    ],
)
async def test_appending_to_an_internal_topic_is_refused_and_writes_nothing(
    group_api: Api, path: str, content_type: str, body: bytes, acks: str
) -> None:
    api = group_api
    end = await with_a_commit(api)
    response = await api.client.post(
        api.topic(OFFSETS_TOPIC) + path, data=body, params={"acks": acks}, headers={"Content-Type": content_type}
    )
    error = await error_of(response, 400)
    assert error["error"] == "INVALID_TOPIC_EXCEPTION"
    assert f"cannot append to internal topic '{OFFSETS_TOPIC}'" in error["message"]
    await api.client.app[PRODUCER_KEY].drain()  # any acks=0 append that was accepted
    assert offsets_log_end(api) == end
    assert await committed(api, "g") == {("t", 0): 1}


async def test_the_node_refuses_an_internal_append_whichever_door_it_came_through(group_api: Api) -> None:
    api = group_api
    end = await with_a_commit(api)
    with pytest.raises(InvalidTopic, match="cannot append to internal topic"):
        await api.node.router.produce(OFFSETS_TOPIC, 0, encode_batch([RecordInput(b"g", b"x", [], 1)]), Acks.ALL, 1000)
    assert offsets_log_end(api) == end


async def test_deleting_an_internal_topic_is_refused_and_offsets_survive(group_api: Api) -> None:
    api = group_api
    end = await with_a_commit(api)
    error = await error_of(await api.client.delete(api.topic(OFFSETS_TOPIC)), 400)
    assert error["error"] == "INVALID_TOPIC_EXCEPTION"
    assert f"cannot delete internal topic '{OFFSETS_TOPIC}'" in error["message"]
    assert OFFSETS_TOPIC in api.node.view.topics
    assert offsets_log_end(api) == end
    assert await committed(api, "g") == {("t", 0): 1}


@pytest.mark.parametrize("exists", [False, True])
async def test_a_client_cannot_create_a_topic_under_an_internal_name(group_api: Api, exists: bool) -> None:
    api = group_api
    if exists:
        await with_a_commit(api)
    body = {
        "topic_name": OFFSETS_TOPIC,
        "partitions_count": 1,
        "replication_factor": 1,
        "configs": [{"name": "cleanup.policy", "value": "delete"}, {"name": "retention.ms", "value": "1"}],
    }
    error = await error_of(await api.client.post(f"{api.cluster}/topics", json=body), 400)
    assert error["error"] == "INVALID_TOPIC_EXCEPTION"
    assert "reserved for the broker's internal topic" in error["message"]
    assert (OFFSETS_TOPIC in api.node.view.topics) is exists
    if exists:
        assert api.node.topic_configs.effective(api.node.view.topics[OFFSETS_TOPIC].configs)["cleanup.policy"] == (
            "compact"
        )


async def test_the_coordinator_still_commits_after_refusals(group_api: Api) -> None:
    api = group_api
    await with_a_commit(api)
    await api.client.delete(api.topic(OFFSETS_TOPIC))
    await api.produce("t", {"value": {"data": 2}})
    assert (await commit(api, "g", "t", 2)).status == 200
    assert await committed(api, "g") == {("t", 0): 2}
