"""``replicas_assignments`` on a real one-broker node: created as assigned, refusals name the problem and create nothing.

The three-broker placements, leaders and records are ``tests/integration/test_manual_assignment.py``'s.
"""

from __future__ import annotations

import pytest

from tests.unit.server.conftest import Api, error_of


async def test_a_manual_assignment_creates_its_partitions_on_the_named_broker(api: Api) -> None:
    body = {"topic_name": "placed", "replicas_assignments": {"1": [1], "0": [1]}}
    response = await api.client.post(f"{api.cluster}/topics", json=body)
    assert response.status == 201, await response.text()
    created = await response.json()
    assert (created["partitions_count"], created["replication_factor"]) == (2, 1)
    partitions = await (await api.client.get(f"{api.topic('placed')}/partitions")).json()
    assert [(p["partition_id"], p["leader"]["related"].endswith("/replicas/1")) for p in partitions["data"]] == [
        (0, True),
        (1, True),
    ]
    await api.produce("placed", {"partition_id": 1, "value": {"type": "STRING", "data": "one"}})
    assert await api.values("placed", 1) == ["one"]


async def test_an_empty_assignment_is_none_and_the_counts_apply(api: Api) -> None:
    body = {"topic_name": "counted", "partitions_count": 2, "replicas_assignments": {}}
    response = await api.client.post(f"{api.cluster}/topics", json=body)
    assert response.status == 201, await response.text()
    assert (await response.json())["partitions_count"] == 2


async def test_validate_only_with_an_assignment_answers_the_would_be_topic_and_creates_nothing(api: Api) -> None:
    body = {"topic_name": "dry", "replicas_assignments": {"0": [1], "1": [1], "2": [1]}, "validate_only": True}
    response = await api.client.post(f"{api.cluster}/topics", json=body)
    assert response.status == 200, await response.text()
    assert ((await response.json())["partitions_count"]) == 3
    await error_of(await api.client.get(api.topic("dry")), 404)


@pytest.mark.parametrize(
    ("extra", "error", "message"),
    [
        ({"replicas_assignments": {"0": [1], "2": [1]}}, "INVALID_REPLICA_ASSIGNMENT", "partition 1 is missing"),
        ({"replicas_assignments": {"0": [1, 1]}}, "INVALID_REPLICA_ASSIGNMENT", "names broker 1 more than once"),
        ({"replicas_assignments": {"0": []}}, "INVALID_REPLICA_ASSIGNMENT", "partition 0 has no replicas"),
        ({"replicas_assignments": {"0": [2]}}, "INVALID_REPLICA_ASSIGNMENT", "broker 2, which is not a registered"),
        (
            {"replicas_assignments": {"0": [1], "1": [1]}, "partitions_count": 2},
            "INVALID_REQUEST",
            "cannot be combined with partitions_count (2)",
        ),
        (
            {"replicas_assignments": {"0": [1]}, "replication_factor": 1},
            "INVALID_REQUEST",
            "cannot be combined with replication_factor (1)",
        ),
        (
            {"replicas_assignments": {"0": [1]}, "configs": [{"name": "min.insync.replicas", "value": "2"}]},
            "INVALID_CONFIG",
            "greater than the replication factor 1",
        ),
    ],
)
@pytest.mark.parametrize("validate_only", [False, True])
async def test_a_refused_assignment_is_400_naming_the_problem_and_creates_nothing(
    api: Api, extra: dict, error: str, message: str, validate_only: bool
) -> None:
    body = {"topic_name": "refused", "validate_only": validate_only, **extra}
    refused = await error_of(await api.client.post(f"{api.cluster}/topics", json=body), 400)
    assert refused["error"] == error and message in refused["message"], refused
    assert refused["error_code"] == {"INVALID_REPLICA_ASSIGNMENT": 40002}.get(error, refused["error_code"])
    await error_of(await api.client.get(api.topic("refused")), 404)
    assert "refused" not in api.node.view.topics


@pytest.mark.parametrize(
    "assignments", [{"zero": [1]}, {"00": [1]}, {"-1": [1]}, {"0": 1}, {"0": ["1"]}, {"0": [True]}, [[1]]]
)
async def test_an_assignment_of_the_wrong_shape_is_422_naming_the_field(api: Api, assignments: object) -> None:
    body = {"topic_name": "shapeless", "replicas_assignments": assignments}
    refused = await error_of(await api.client.post(f"{api.cluster}/topics", json=body), 422)
    assert any(problem["field"].startswith("replicas_assignments") for problem in refused["errors"]), refused
    assert "shapeless" not in api.node.view.topics
