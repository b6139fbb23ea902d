"""JSON nested far deeper than any real body, on every JSON endpoint: 400 naming the limit, nothing stored."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from broker.server.json_depth import MAX_JSON_DEPTH
from tests.unit.server.conftest import Api, error_of
from tests.unit.server.group_offsets import commit, committed

DEEP = "[" * 5000 + "]" * 5000


async def assert_refused_for_depth(response) -> None:
    body = await error_of(response, 400)
    assert body["error"] == "INVALID_REQUEST"
    assert f"limit of {MAX_JSON_DEPTH} levels" in body["message"]
    assert body["max_json_depth"] == MAX_JSON_DEPTH


def deep_body(template: str) -> bytes:
    return template.replace("DEEP", DEEP).encode()


@pytest.mark.parametrize(
    ("path", "template"),
    [
        ("/records", '{"value": {"data": DEEP}}'),
        ("/records:batch", '{"entries": [{"value": {"data": DEEP}}]}'),
        ("/records:batch", '{"entries": DEEP}'),
    ],
)
async def test_produce_refuses_deep_json_and_appends_nothing(group_api: Api, path: str, template: str) -> None:
    api = group_api
    await api.create_topic("t")
    response = await api.client.post(
        api.topic("t") + path, data=deep_body(template), headers={"Content-Type": "application/json"}
    )
    await assert_refused_for_depth(response)
    assert await api.values("t") == []


async def test_a_deep_record_among_several_fails_alone(group_api: Api) -> None:
    api = group_api
    await api.create_topic("t")
    body = deep_body('{"value": {"data": 1}}{"value": {"data": DEEP}}')
    response = await api.client.post(
        api.topic("t") + "/records", data=body, headers={"Content-Type": "application/json"}
    )
    assert response.status == 200
    lines = (await response.text()).splitlines()
    assert f"limit of {MAX_JSON_DEPTH} levels" in lines[1]
    assert await api.values("t") == ["1"]


async def test_a_chunked_stream_refuses_a_deep_record_on_its_line(group_api: Api) -> None:
    api = group_api
    await api.create_topic("t")

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"value": {"data": 1}}\n'
        yield deep_body('{"value": {"data": DEEP}}')

    response = await api.client.post(
        api.topic("t") + "/records", data=chunks(), headers={"Content-Type": "application/x-ndjson"}
    )
    lines = (await response.text()).splitlines()
    assert f"limit of {MAX_JSON_DEPTH} levels" in lines[1]
    assert await api.values("t") == ["1"]


async def test_create_topic_refuses_deep_json(group_api: Api) -> None:
    api = group_api
    body = deep_body('{"topic_name": "deep", "configs": DEEP}')
    response = await api.client.post(f"{api.cluster}/topics", data=body, headers={"Content-Type": "application/json"})
    await assert_refused_for_depth(response)
    assert "deep" not in api.node.view.topics


async def test_group_bodies_refuse_deep_json(group_api: Api) -> None:
    api = group_api
    await api.create_topic("t")
    await api.produce("t", {"value": {"data": 1}})
    group = f"{api.cluster}/consumer-groups/g"
    assert (await commit(api, "g", "t", 1)).status == 200
    headers = {"Content-Type": "application/json"}
    for path, template in [
        (f"{group}/offsets", '{"offsets": [{"topic_name": "t", "partition_id": 0, "offset": 0, "metadata": DEEP}]}'),
        (f"{group}/consumers/m:heartbeat", '{"member_epoch": 0, "subscribed_topics": DEEP}'),
        (f"{api.cluster}/partitions:elect-preferred", '{"topic_name": DEEP}'),
    ]:
        await assert_refused_for_depth(await api.client.post(path, data=deep_body(template), headers=headers))
    assert await committed(api, "g") == {("t", 0): 1}


async def test_a_stored_value_too_deep_to_parse_is_read_as_a_string(group_api: Api) -> None:
    api = group_api
    await api.create_topic("t")
    await api.produce("t", {"value": {"type": "STRING", "data": DEEP}})
    body = await api.read("t", format="json")
    assert body["data"][0]["value"] == {"type": "STRING", "data": DEEP}
