"""Health, readiness, metrics, OpenAPI coverage, and the JSON-only error contract."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from openapi_spec_validator import validate

from broker.node.broker_node import BrokerNode
from broker.server.api_routes import ApiLimits
from broker.server.app import ROUTE_TABLES, create_app
from broker.server.openapi import openapi_document
from tests.unit.server.conftest import Api, error_of


async def test_health_and_readiness(api: Api) -> None:
    assert (await (await api.client.get("/healthz")).json()) == {"status": "ok"}
    ready = await api.client.get("/readyz")
    assert ready.status == 200 and (await ready.json())["broker_id"] == 1


async def test_metrics_expose_partition_offsets_and_requests(api: Api) -> None:
    await api.create_topic("t", partitions=2)
    await api.produce("t", {"partition_id": 1, "value": {"data": 1}})
    await api.client.get(api.topic("missing"))
    text = await (await api.client.get("/metrics")).text()
    assert 'highwater_partition_log_end_offset{partition="1",topic="t"} 1.0' in text
    assert 'highwater_partition_high_watermark{partition="1",topic="t"} 1.0' in text
    assert 'highwater_partition_log_start_offset{partition="0",topic="t"} 0.0' in text
    assert (
        'highwater_http_requests_total{method="GET",'
        'route="/v3/clusters/{cluster_id}/topics/{topic_name}",status="404"} 1.0' in text
    )
    assert (
        'highwater_http_request_duration_seconds_count{method="POST",route="/v3/clusters/{cluster_id}/topics"}' in text
    )


def registered_routes(app: web.Application) -> set[tuple[str, str]]:
    return {
        (route.resource.canonical, route.method.lower())
        for route in app.router.routes()
        if route.method != "HEAD" and route.resource is not None
    }


async def test_openapi_documents_exactly_the_registered_public_routes(api: Api) -> None:
    document = await (await api.client.get("/openapi.json")).json()
    assert document["openapi"].startswith("3.1")
    documented = {(path, method) for path, item in document["paths"].items() for method in item}
    registered = registered_routes(create_app(api.node))
    public = {(path, method) for path, method in registered if not path.startswith("/internal/")}
    assert documented == public
    assert ("/v3/clusters/{cluster_id}/topics", "post") in public, "the routes came from the app"


async def test_the_served_document_is_valid_openapi(api: Api) -> None:
    validate(await (await api.client.get("/openapi.json")).json())


async def test_broker_to_broker_routes_are_declared_but_not_in_the_public_document(api: Api) -> None:
    document = await (await api.client.get("/openapi.json")).json()
    assert [path for path in document["paths"] if path.startswith("/internal/")] == []
    internal = {route.path for table in ROUTE_TABLES for route in table.routes if not route.public}
    assert "/internal/fetch" in internal and all(path.startswith("/internal/") for path in internal)


async def test_request_bodies_are_the_schemas_of_the_models_that_validate_them(api: Api) -> None:
    document = await (await api.client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    create = document["paths"]["/v3/clusters/{cluster_id}/topics"]["post"]["requestBody"]["content"]
    assert create["application/json"]["schema"] == {"$ref": "#/components/schemas/CreateTopicRequest"}
    assert schemas["CreateTopicRequest"]["additionalProperties"] is False
    heartbeat = schemas["HeartbeatBody"]["properties"]
    assert heartbeat["session_timeout_ms"]["minimum"] == 100 and heartbeat["member_epoch"]["minimum"] == -1
    entries = schemas["BatchRequest"]["properties"]["entries"]
    assert entries["items"] == {"$ref": "#/components/schemas/BatchEntry"}
    assert "$defs" not in document["components"]["schemas"]["CommitBody"]


async def test_openapi_states_the_limits_the_broker_enforces(api: Api) -> None:
    document = await (await api.client.get("/openapi.json")).json()
    settings = api.node.settings
    read = document["paths"]["/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records"]
    query = {parameter["name"]: parameter["schema"] for parameter in read["get"]["parameters"]}
    assert query["timeout_ms"]["maximum"] == settings.fetch_max_wait_ms
    assert query["max_bytes"]["maximum"] == settings.max_request_bytes
    assert query["max_records"]["maximum"] == 100_000
    entries = document["components"]["schemas"]["BatchRequest"]["properties"]["entries"]
    assert (entries["minItems"], entries["maxItems"]) == (1, settings.max_batch_entries)
    assert (
        document["components"]["schemas"]["CreateTopicRequest"]["properties"]["partitions_count"]["maximum"] == 10_000
    )
    cluster = document["paths"]["/v3/clusters/{cluster_id}"]["get"]["parameters"][0]
    assert cluster["example"] == api.node.cluster_id


async def test_numbers_beyond_int64_are_refused_with_400(api: Api) -> None:
    await api.create_topic("wide", partitions=1)
    body = await error_of(await api.client.get(api.topic("wide") + "/partitions/0/records?offset=" + "9" * 30), 400)
    assert body["parameter"] == "offset"
    body = await error_of(await api.client.get(api.topic("wide") + "/partitions/2147483648"), 400)
    assert body["parameter"] == "partition_id"


def test_openapi_references_resolve() -> None:
    document = openapi_document(ROUTE_TABLES, "http://x", ApiLimits(1 << 20, 100, 30_000))

    def refs(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref":
                    yield value
                else:
                    yield from refs(value)
        elif isinstance(node, list):
            for value in node:
                yield from refs(value)

    for ref in refs(document):
        _, section, kind, name = ref.split("/")
        assert name in document[section][kind], ref


async def test_unknown_route_and_wrong_method_are_json(api: Api) -> None:
    body = await error_of(await api.client.get("/nowhere"), 404)
    assert body["error"] == "NOT_FOUND"
    body = await error_of(await api.client.put("/v3/clusters"), 405)
    assert body["error"] == "METHOD_NOT_ALLOWED" and "GET" in body["allowed_methods"]


async def test_unexpected_exception_is_500_json_without_traceback(node: BrokerNode) -> None:
    app = create_app(node)

    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("secret internals")

    app.router.add_get("/broken", broken)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        body = await error_of(await client.get("/broken"), 500)
        assert body["error"] == "UNKNOWN_SERVER_ERROR" and "secret" not in body["message"]
