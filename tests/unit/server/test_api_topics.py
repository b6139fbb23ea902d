"""Clusters, brokers, topics, partitions and offsets over HTTP, with their client mistakes."""

from __future__ import annotations

import pytest

from tests.unit.server.conftest import Api, error_of


async def test_cluster_and_brokers(api: Api) -> None:
    clusters = await (await api.client.get("/v3/clusters")).json()
    assert [c["cluster_id"] for c in clusters["data"]] == [api.node.cluster_id]
    assert clusters["data"][0]["controller_id"] == api.node.node_id
    brokers = await (await api.client.get(f"{api.cluster}/brokers")).json()
    assert [(b["broker_id"], b["url"]) for b in brokers["data"]] == [(1, api.node.advertised_url)]
    one = await (await api.client.get(f"{api.cluster}/brokers/1")).json()
    assert one["broker_id"] == 1
    await error_of(await api.client.get(f"{api.cluster}/brokers/9"), 404)


async def test_unknown_cluster_is_40401(api: Api) -> None:
    body = await error_of(await api.client.get("/v3/clusters/nope/topics"), 404)
    assert body["error_code"] == 40401


async def test_create_describe_list_delete_topic(api: Api) -> None:
    created = await api.create_topic("orders", partitions=3, retention_ms="60000")
    assert created["topic_name"] == "orders" and created["partitions_count"] == 3
    assert {"name": "retention.ms", "value": "60000"} in created["config_values"]
    listed = await (await api.client.get(f"{api.cluster}/topics")).json()
    assert [t["topic_name"] for t in listed["data"]] == ["orders"]
    described = await (await api.client.get(api.topic("orders"))).json()
    assert described["replication_factor"] == 1
    deleted = await api.client.delete(api.topic("orders"))
    assert deleted.status == 204
    body = await error_of(await api.client.get(api.topic("orders")), 404)
    assert body["error_code"] == 40403


async def test_create_without_counts_uses_topic_defaults(api: Api) -> None:
    response = await api.client.post(f"{api.cluster}/topics", json={"topic_name": "d"})
    assert response.status == 201
    body = await response.json()
    assert body["partitions_count"] == api.node.settings.topic_defaults.partitions


async def test_partitions_and_offsets(api: Api) -> None:
    await api.create_topic("t", partitions=2)
    await api.produce("t", {"partition_id": 1, "value": {"type": "STRING", "data": "a"}, "timestamp": 1000})
    await api.produce("t", {"partition_id": 1, "value": {"type": "STRING", "data": "b"}, "timestamp": 2000})
    partitions = await (await api.client.get(f"{api.topic('t')}/partitions")).json()
    assert [p["partition_id"] for p in partitions["data"]] == [0, 1]
    one = await (await api.client.get(api.partition("t", 1))).json()
    assert (one["leader_id"], one["replica_ids"], one["isr"]) == (1, [1], [1])
    assert (one["log_start_offset"], one["high_watermark"], one["log_end_offset"]) == (0, 2, 2)
    offsets = await (await api.client.get(f"{api.partition('t', 1)}/offset")).json()
    assert (offsets["earliest_offset"], offsets["latest_offset"], offsets["log_end_offset"]) == (0, 2, 2)
    by_time = await (await api.client.get(f"{api.partition('t', 1)}/offset", params={"timestamp": "1500"})).json()
    assert by_time["offset"] == 1
    after = await (await api.client.get(f"{api.partition('t', 1)}/offset", params={"timestamp": "9999"})).json()
    assert after["offset"] is None


async def test_unknown_topic_and_partition(api: Api) -> None:
    await api.create_topic("t", partitions=2)
    assert (await error_of(await api.client.get(api.topic("missing")), 404))["error_code"] == 40403
    assert (await error_of(await api.client.get(api.partition("t", 2)), 404))["error_code"] == 40402
    assert (await error_of(await api.client.get(api.partition("missing", 0)), 404))["error_code"] == 40403


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "slash/x", "ünï"])
async def test_invalid_topic_names(api: Api, name: str) -> None:
    await api.create_topic("keep")
    await api.produce("keep", {"value": {"data": 1}})
    response = await api.client.post(f"{api.cluster}/topics", json={"topic_name": name, "partitions_count": 1})
    body = await error_of(response, 400)
    assert body["error"] == "INVALID_TOPIC_EXCEPTION"
    listed = await (await api.client.get(f"{api.cluster}/topics")).json()
    assert [t["topic_name"] for t in listed["data"]] == ["keep"]
    assert await api.values("keep") == ["1"]


async def test_longest_legal_name_is_accepted(api: Api) -> None:
    await api.create_topic("a._-Z9" + "x" * 243)


async def test_topic_already_exists_is_400_40002_and_keeps_data(api: Api) -> None:
    await api.create_topic("t", partitions=2)
    await api.produce("t", {"partition_id": 0, "value": {"type": "STRING", "data": "kept"}})
    response = await api.client.post(f"{api.cluster}/topics", json={"topic_name": "t", "partitions_count": 5})
    error = await error_of(response, 400)
    assert (error["error"], error["error_code"]) == ("TOPIC_ALREADY_EXISTS", 40002)
    assert (await (await api.client.get(api.topic("t"))).json())["partitions_count"] == 2
    assert await api.values("t") == ["kept"]


async def test_validate_only_answers_the_would_be_topic_and_creates_nothing(api: Api) -> None:
    body = {"topic_name": "dry", "partitions_count": 3, "validate_only": True}
    body["configs"] = [{"name": "retention.ms", "value": "60000"}]
    response = await api.client.post(f"{api.cluster}/topics", json=body)
    assert response.status == 200, await response.text()
    answered = await response.json()
    assert (answered["topic_name"], answered["partitions_count"], answered["config_values"]) == (
        "dry",
        3,
        [{"name": "retention.ms", "value": "60000"}],
    )
    assert "dry" not in api.node.view.topics
    assert (await error_of(await api.client.get(api.topic("dry")), 404))["error_code"] == 40403


@pytest.mark.parametrize("refused", [{"partitions_count": 0}, {"configs": [{"name": "retention.ms", "value": "x"}]}])
async def test_validate_only_refuses_what_a_creation_refuses(api: Api, refused: dict) -> None:
    response = await api.client.post(
        f"{api.cluster}/topics", json={"topic_name": "dry", "validate_only": True, **refused}
    )
    assert response.status == 400, await response.text()
    assert "dry" not in api.node.view.topics


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"partitions_count": 0}, "INVALID_PARTITIONS"),
        ({"partitions_count": -3}, "INVALID_PARTITIONS"),
        ({"partitions_count": 1_000_000}, "INVALID_PARTITIONS"),
        ({"replication_factor": 0}, "INVALID_REPLICATION_FACTOR"),
        ({"replication_factor": 2}, "INVALID_REPLICATION_FACTOR"),
        ({"configs": [{"name": "retention.ms", "value": "soon"}]}, "INVALID_CONFIG"),
        ({"configs": [{"name": "retention.msec", "value": None}]}, "INVALID_CONFIG"),
    ],
)
async def test_bad_counts_and_configs(api: Api, body: dict, error: str) -> None:
    response = await api.client.post(f"{api.cluster}/topics", json={"topic_name": "t", **body})
    assert (await error_of(response, 400))["error"] == error
    assert (await error_of(await api.client.get(api.topic("t")), 404))["error_code"] == 40403


async def test_malformed_json_is_400(api: Api) -> None:
    response = await api.client.post(
        f"{api.cluster}/topics", data=b'{"topic_name": ', headers={"Content-Type": "application/json"}
    )
    body = await error_of(response, 400)
    assert body["error"] == "INVALID_REQUEST" and "malformed JSON" in body["message"]


async def test_wrong_types_are_422_naming_the_field(api: Api) -> None:
    response = await api.client.post(f"{api.cluster}/topics", json={"topic_name": "t", "partitions_count": "many"})
    body = await error_of(response, 422)
    assert "partitions_count" in body["message"]
    assert body["errors"][0]["field"] == "partitions_count"
    response = await api.client.post(f"{api.cluster}/topics", json=["t"])
    assert (await error_of(response, 422))["error_code"] == 42201


async def test_unsupported_content_type_is_415(api: Api) -> None:
    response = await api.client.post(
        f"{api.cluster}/topics", data=b"topic_name=t", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    body = await error_of(response, 415)
    assert "application/json" in body["message"]


async def test_negative_or_non_numeric_partition_in_path(api: Api) -> None:
    await api.create_topic("t")
    for bad in ("-1", "abc", "1.5"):
        body = await error_of(await api.client.get(f"{api.topic('t')}/partitions/{bad}"), 400)
        assert "partition_id" in body["message"]
    body = await error_of(await api.client.get(f"{api.partition('t', 0)}/offset", params={"timestamp": "-5"}), 400)
    assert "timestamp" in body["message"]
