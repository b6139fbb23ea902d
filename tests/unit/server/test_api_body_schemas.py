"""JSON bodies are held to their schema: unknown fields and explicit nulls where a value is required are refused."""

from __future__ import annotations

import pytest

from tests.unit.server.conftest import Api, error_of


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"topic_name": None}, "topic_name"),
        ({"topic_name": None, "x-unknown": 1}, "x-unknown"),
        ({"topic_name": "t", "all_topics": True}, "all_topics"),
        ([], "body"),
    ],
)
async def test_elect_preferred_refuses_a_body_outside_its_schema(api: Api, body: object, field: str) -> None:
    await api.create_topic("t")
    response = await api.client.post(f"{api.cluster}/partitions:elect-preferred", json=body)
    error = await error_of(response, 422)
    assert error["error"] == "UNPROCESSABLE_ENTITY"
    assert field in {problem["field"] for problem in error["errors"]}


@pytest.mark.parametrize("body", [None, {}, {"topic_name": "t"}])
async def test_elect_preferred_accepts_no_body_an_empty_one_or_a_topic(api: Api, body: object) -> None:
    await api.create_topic("t")
    response = await api.client.post(f"{api.cluster}/partitions:elect-preferred", json=body)
    assert response.status == 200, await response.text()
    assert (await response.json()) == {"elected": []}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"topic_name": "t", "partition_count": 3}, "partition_count"),
        (
            {"topic_name": "t", "configs": [{"name": "retention.ms", "value": "1", "operation": "SET"}]},
            "configs.0.operation",
        ),
    ],
)
async def test_create_topic_refuses_unknown_fields_and_creates_nothing(api: Api, body: dict, field: str) -> None:
    response = await api.client.post(f"{api.cluster}/topics", json=body)
    error = await error_of(response, 422)
    assert field in {problem["field"] for problem in error["errors"]}
    assert "t" not in api.node.view.topics


async def test_records_batch_refuses_unknown_top_level_fields_and_appends_nothing(api: Api) -> None:
    await api.create_topic("t")
    body = {"entries": [{"value": {"data": 1}}], "acks": "all"}
    error = await error_of(await api.client.post(api.topic("t") + "/records:batch", json=body), 422)
    assert "acks" in {problem["field"] for problem in error["errors"]}
    assert await api.values("t") == []
