"""Path and query parameters: every route parses them the same way, and one mistake gets one answer.

The routes come from the app's router and the parameter types from the published
OpenAPI document, so a route added later is covered without touching these tests.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from broker.security.broker_token import broker_authorization
from broker.server.api_routes import ApiLimits
from broker.server.app import ROUTE_TABLES
from broker.server.openapi import public_paths
from tests.unit.server.conftest import Api, error_of

MALFORMED_INTEGERS = ["true", "-1", "1.5", "0x1", " 1", "١"]
"""Not decimal non-negative integers: a word, a sign, a fraction, hex, a space, an Arabic-Indic digit."""


def documented_paths(api: Api) -> dict[str, Any]:
    """The paths of the published document of this broker."""
    paths, _ = public_paths(ROUTE_TABLES, ApiLimits.of(api.node.settings))
    return paths


def integer_parameters(api: Api, where: str) -> set[str]:
    """Names of the parameters the document declares as integers ``in`` a path or the query."""
    return {
        parameter["name"]
        for operations in documented_paths(api).values()
        for operation in operations.values()
        for parameter in operation["parameters"]
        if parameter["in"] == where and parameter["schema"].get("type") == "integer"
    }


def concrete_path(api: Api, pattern: str, **values: str) -> str:
    """``pattern`` with the cluster's id, topic ``t`` and group ``g``, and ``values`` for the rest."""
    defaults = {
        "cluster_id": api.node.cluster_id,
        "topic_name": "t",
        "topic": "t",
        "consumer_group_id": "g",
        "consumer_id": "m",
        "partition_id": "0",
        "broker_id": "1",
        "name": "retention.ms",
    }
    return re.sub(r"\{(\w+)\}", lambda match: {**defaults, **values}[match.group(1)], pattern)


def broker_headers(api: Api) -> dict[str, str]:
    """The broker's own token: the internal routes take nothing else, and these tests check their parsing."""
    return {"Authorization": broker_authorization(api.node.node_id, api.node.broker_secret)}


def routes_with_path_parameter(api: Api, name: str) -> list[tuple[str, str]]:
    """(method, canonical path) of every route of the app whose path has ``{name}``."""
    found: list[tuple[str, str]] = []
    for resource in api.client.app.router.resources():
        if "{" + name + "}" in resource.canonical:
            found.extend((route.method, resource.canonical) for route in resource if route.method != "HEAD")
    return found


async def test_a_path_parameter_of_the_wrong_type_on_an_internal_route_is_400_naming_it(api: Api) -> None:
    response = await api.client.post("/internal/controller/controlled-shutdown/true", headers=broker_headers(api))
    body = await error_of(response, 400)
    assert body["error"] == "INVALID_REQUEST" and body["error_code"] == 40001
    assert body["parameter"] == "broker_id" and "broker_id" in body["message"] and "'true'" in body["message"]
    assert api.node.catalog.controller_id() == api.node.node_id, "nothing moved: the broker is still the controller"


@pytest.mark.parametrize("topic", ["t", "missing"], ids=["existing-topic", "parsed-before-the-topic-is-looked-up"])
async def test_every_integer_path_parameter_of_every_route_refuses_a_malformed_value_with_400(
    api: Api, topic: str
) -> None:
    await api.create_topic("t")
    names = integer_parameters(api, "path")
    assert names >= {"partition_id", "broker_id"}
    checked = []
    for name in sorted(names):
        for method, pattern in routes_with_path_parameter(api, name):
            for text in MALFORMED_INTEGERS:
                path = concrete_path(api, pattern, topic_name=topic, topic=topic, **{name: text})
                response = await api.client.request(
                    method, path, data=b"", headers={"Content-Type": "application/json", **broker_headers(api)}
                )
                body = await error_of(response, 400)
                assert (body["error_code"], body["parameter"]) == (40001, name), (method, path, body)
                assert name in body["message"]
            checked.append((method, pattern))
    assert len(checked) >= 7, checked
    assert await api.values("t") == []


def operations_with_integer_query_parameters(api: Api) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(method, path, parameter, operation) for every integer query parameter the document publishes."""
    return [
        (method.upper(), path, parameter["name"], operation)
        for path, operations in documented_paths(api).items()
        for method, operation in operations.items()
        for parameter in operation["parameters"]
        if parameter["in"] == "query" and parameter["schema"].get("type") == "integer"
    ]


@pytest.mark.parametrize("text", ["true", "-1", "2.5"])
@pytest.mark.parametrize("topic", ["t", "missing"], ids=["existing-topic", "parsed-before-the-topic-is-looked-up"])
async def test_every_integer_query_parameter_refuses_a_malformed_value_with_400_naming_it(
    api: Api, text: str, topic: str
) -> None:
    await api.create_topic("t")
    operations = operations_with_integer_query_parameters(api)
    assert {name for _, _, name, _ in operations} >= {"offset", "max_records", "max_bytes", "timeout_ms", "timestamp"}
    for method, pattern, name, operation in operations:
        content_types = list(operation.get("requestBody", {}).get("content", {"application/json": None}))
        response = await api.client.request(
            method,
            concrete_path(api, pattern, topic_name=topic),
            params={name: text},
            data=b"",
            headers={"Content-Type": content_types[0]},
        )
        body = await error_of(response, 400)
        assert (body["error_code"], body["parameter"]) == (40001, name), (method, pattern, body)
    assert await api.values("t") == []
