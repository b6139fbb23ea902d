"""The security door on one real broker: modes, challenges, failed-login limits, listings, live changes, audit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.cluster.security_store import SecurityStore
from broker.node.broker_node import BrokerNode
from broker.security.broker_token import broker_authorization
from broker.security.scram import new_credential
from broker.server.app import create_app
from tests.unit.server.conftest import Api, broker_settings, error_of, wait_until_ready

PASSWORD = "s3cret-pw"
FAILED_LOGINS = 3


def basic(username: str, password: str = PASSWORD) -> dict[str, str]:
    return {"Authorization": aiohttp.encode_basic_auth(username, password)}


ADMIN = basic("admin")


async def serve(tmp_path: Path, name: str, **security: Any) -> AsyncIterator[Api]:
    settings = broker_settings(
        tmp_path / name, offsets_topic_num_partitions=1, transaction_state_num_partitions=1, security=security
    )
    node = await BrokerNode.start(settings)
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield Api(client, node)
    finally:
        await node.stop()


@pytest.fixture
async def open_api(tmp_path: Path) -> AsyncIterator[Api]:
    async for api in serve(tmp_path, "open"):
        yield api


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[Api]:
    """``basic`` with super user ``admin``; users are added through the API, as an operator would."""
    async for api in serve(
        tmp_path, "secured", authentication="basic", super_users=["admin"], failed_logins_per_minute=FAILED_LOGINS
    ):
        await SecurityStore(api.node.store).put_user("admin", new_credential(PASSWORD))
        await api.node.security.catch_up()
        yield api


async def add_user(api: Api, name: str, password: str = PASSWORD) -> None:
    response = await api.client.post(f"{api.cluster}/users", json={"name": name, "password": password}, headers=ADMIN)
    assert response.status in (200, 201), await response.text()


async def allow(api: Api, principal: str, resource_type: str, name: str, operation: str, **extra: str) -> None:
    body = {
        "resource_type": resource_type,
        "resource_name": name,
        "pattern_type": "LITERAL",
        "principal": principal,
        "operation": operation,
        "permission": "ALLOW",
        **extra,
    }
    response = await api.client.post(f"{api.cluster}/acls", json=body, headers=ADMIN)
    assert response.status == 201, await response.text()


async def create_topic(api: Api, name: str) -> None:
    body = {"topic_name": name, "partitions_count": 1, "replication_factor": 1}
    response = await api.client.post(f"{api.cluster}/topics", json=body, headers=ADMIN)
    assert response.status == 201, await response.text()


async def test_without_authentication_clients_do_anything_but_call_broker_routes(open_api: Api) -> None:
    await open_api.create_topic("t")
    await open_api.produce("t", {"value": {"data": 1}})
    response = await open_api.client.post(f"/internal/controller/controlled-shutdown/{open_api.node.node_id}")
    body = await error_of(response, 403)
    assert body["error"] == "CLUSTER_AUTHORIZATION_FAILED"
    description = await open_api.node.describer.describe_partition("t", 0)
    assert description.leader_id == open_api.node.node_id, "nothing moved"


async def test_a_forged_broker_token_is_401_even_without_authentication(open_api: Api) -> None:
    forged = {"Authorization": broker_authorization(open_api.node.node_id, b"not-the-secret" * 3)}
    response = await open_api.client.get("/internal/groups", headers=forged)
    await error_of(response, 401)
    genuine = {"Authorization": broker_authorization(open_api.node.node_id, open_api.node.broker_secret)}
    assert (await open_api.client.get("/internal/groups", headers=genuine)).status == 200


async def test_401_carries_a_basic_challenge_and_the_json_error(secured: Api) -> None:
    response = await secured.client.get(f"{secured.cluster}/topics")
    body = await error_of(response, 401)
    assert body["error"] == "AUTHENTICATION_FAILED" and body["error_code"] == 40101
    assert response.headers["WWW-Authenticate"].startswith('Basic realm="highwater"')
    assert (await secured.client.get("/healthz")).status == 200, "liveness stays open to probes"


async def test_a_source_over_its_failed_logins_waits_even_with_the_right_password(secured: Api) -> None:
    for _ in range(FAILED_LOGINS):
        await error_of(await secured.client.get(secured.cluster, headers=basic("admin", "guess")), 401)
    response = await secured.client.get(secured.cluster, headers=ADMIN)
    body = await error_of(response, 429)
    assert body["error"] == "THROTTLING_QUOTA_EXCEEDED" and body["retriable"] is True
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    assert "guess" not in json.dumps(body)


async def test_listings_show_only_what_the_principal_may_describe(secured: Api) -> None:
    for name in ("mine", "theirs"):
        await create_topic(secured, name)
        body = {"offsets": [{"topic_name": name, "partition_id": 0, "offset": 0}]}
        committed = await secured.client.post(
            f"{secured.cluster}/consumer-groups/group-{name}/offsets", json=body, headers=ADMIN
        )
        assert committed.status == 200, await committed.text()
    await add_user(secured, "alice")
    await allow(secured, "User:alice", "TOPIC", "mine", "READ")
    await allow(secured, "User:alice", "GROUP", "group-mine", "DESCRIBE")
    alice = basic("alice")

    topics = await (await secured.client.get(f"{secured.cluster}/topics", headers=alice)).json()
    assert [topic["topic_name"] for topic in topics["data"]] == ["mine"]
    groups = await (await secured.client.get(f"{secured.cluster}/consumer-groups", headers=alice)).json()
    assert [group["consumer_group_id"] for group in groups["data"]] == ["group-mine"]
    everything = await (await secured.client.get(f"{secured.cluster}/topics", headers=ADMIN)).json()
    assert {topic["topic_name"] for topic in everything["data"]} >= {"mine", "theirs"}


async def test_the_transactions_listing_shows_only_the_ids_the_principal_may_describe(secured: Api) -> None:
    for name in ("txn-mine", "txn-theirs"):
        initialised = await secured.client.post(
            f"{secured.cluster}/transactions/{name}/producer-id", json={}, headers=ADMIN
        )
        assert initialised.status == 200, await initialised.text()
    await add_user(secured, "alice")
    await allow(secured, "User:alice", "TRANSACTIONAL_ID", "txn-mine", "DESCRIBE")
    alice = basic("alice")

    listing = await (await secured.client.get(f"{secured.cluster}/transactions", headers=alice)).json()
    assert [t["transactional_id"] for t in listing["data"]] == ["txn-mine"]
    refused = await secured.client.get(f"{secured.cluster}/transactions/txn-theirs", headers=alice)
    assert (refused.status, (await refused.json())["error"]) == (403, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED")
    everything = await (await secured.client.get(f"{secured.cluster}/transactions", headers=ADMIN)).json()
    assert [t["transactional_id"] for t in everything["data"]] == ["txn-mine", "txn-theirs"]


async def test_a_group_answers_only_about_the_topics_the_principal_may_describe(secured: Api) -> None:
    for name in ("seen", "hidden"):
        await create_topic(secured, name)
    body = {"offsets": [{"topic_name": t, "partition_id": 0, "offset": 0} for t in ("seen", "hidden")]}
    response = await secured.client.post(f"{secured.cluster}/consumer-groups/g/offsets", json=body, headers=ADMIN)
    assert response.status == 200, await response.text()
    await add_user(secured, "bob")
    await allow(secured, "User:bob", "GROUP", "g", "DESCRIBE")
    await allow(secured, "User:bob", "TOPIC", "seen", "DESCRIBE")
    bob = basic("bob")
    for path in ("offsets", "lags"):
        answer = await (await secured.client.get(f"{secured.cluster}/consumer-groups/g/{path}", headers=bob)).json()
        assert {row["topic_name"] for row in answer["data"]} == {"seen"}, path


async def test_a_topic_the_principal_may_not_see_is_missing_when_deleted(secured: Api) -> None:
    await create_topic(secured, "secret")
    await add_user(secured, "carol")
    response = await secured.client.delete(f"{secured.cluster}/topics/secret", headers=basic("carol"))
    assert (await error_of(response, 404))["error"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert "secret" in secured.node.view.topics


async def test_user_and_acl_changes_apply_to_the_next_request(secured: Api) -> None:
    await create_topic(secured, "t")
    path = f"{secured.cluster}/topics/t"
    await add_user(secured, "dave", "first")
    assert (await secured.client.get(path, headers=basic("dave", "first"))).status == 403
    await allow(secured, "User:dave", "TOPIC", "t", "DESCRIBE")
    assert (await secured.client.get(path, headers=basic("dave", "first"))).status == 200

    await add_user(secured, "dave", "second")
    assert (await secured.client.get(path, headers=basic("dave", "first"))).status == 401, "old password forgotten"
    assert (await secured.client.get(path, headers=basic("dave", "second"))).status == 200

    dave = {"principal": "User:dave", "resource_type": "TOPIC", "pattern_type": "ANY", "operation": "ANY"}
    removed = await secured.client.delete(
        f"{secured.cluster}/acls", params={**dave, "permission": "ANY"}, headers=ADMIN
    )
    assert [acl["operation"] for acl in (await removed.json())["data"]] == ["DESCRIBE"]
    assert (await secured.client.get(path, headers=basic("dave", "second"))).status == 403

    assert (await secured.client.delete(f"{secured.cluster}/users/dave", headers=ADMIN)).status == 204
    assert (await secured.client.get(path, headers=basic("dave", "second"))).status == 401


async def test_users_are_listed_without_credentials_and_unknown_ones_are_404(secured: Api) -> None:
    await add_user(secured, "erin")
    listed = await (await secured.client.get(f"{secured.cluster}/users", headers=ADMIN)).json()
    assert {"name": "erin", "mechanism": "SCRAM-SHA-512", "iterations": 4096} in listed["data"]
    assert PASSWORD not in json.dumps(listed)
    response = await secured.client.delete(f"{secured.cluster}/users/nobody-here", headers=ADMIN)
    assert (await error_of(response, 404))["error"] == "RESOURCE_NOT_FOUND"


GOOD_ACL = {
    "resource_type": "TOPIC",
    "resource_name": "t",
    "pattern_type": "LITERAL",
    "principal": "User:alice",
    "operation": "READ",
    "permission": "ALLOW",
}
REFUSED_ACLS = [
    ({"resource_type": "QUEUE"}, "resource_type"),
    ({"principal": "alice"}, "principal"),
    ({"operation": "FLY"}, "operation"),
    ({"permission": "MAYBE"}, "permission"),
    ({"resource_type": "CLUSTER", "resource_name": "not-kafka-cluster"}, "kafka-cluster"),
    ({"operaton": "READ"}, "operaton"),
]


ALL_ANY = {"resource_type": "ANY", "pattern_type": "ANY", "operation": "ANY", "permission": "ANY"}
"""A delete filter naming every required field, each matching anything: it would delete every ACL."""


async def refused_acl(response: aiohttp.ClientResponse, problem: str) -> None:
    """The spec's 400 for a refused ACL: Kafka's INVALID_REQUEST with the REST Proxy's 40002, naming the problem."""
    answer = await error_of(response, 400)
    assert (answer["error"], answer["error_code"]) == ("INVALID_REQUEST", 40002)
    assert problem in answer["message"]


@pytest.mark.parametrize(("change", "problem"), REFUSED_ACLS)
async def test_a_refused_acl_is_400_naming_the_problem_and_stores_nothing(
    secured: Api, change: dict[str, str], problem: str
) -> None:
    response = await secured.client.post(f"{secured.cluster}/acls", json={**GOOD_ACL, **change}, headers=ADMIN)
    await refused_acl(response, problem)
    assert await SecurityStore(secured.node.store).acls() == []


@pytest.mark.parametrize(("change", "problem"), REFUSED_ACLS)
async def test_a_batch_with_one_refused_acl_is_400_and_stores_none(
    secured: Api, change: dict[str, str], problem: str
) -> None:
    batch = {"data": [{**GOOD_ACL, "principal": "User:bob"}, {**GOOD_ACL, **change}]}
    response = await secured.client.post(f"{secured.cluster}/acls:batch", json=batch, headers=ADMIN)
    await refused_acl(response, problem)
    assert await SecurityStore(secured.node.store).acls() == []


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ({}, "needs resource_type, pattern_type, operation, permission"),
        ({name: value for name, value in ALL_ANY.items() if name != "permission"}, "needs permission"),
        ({**ALL_ANY, "operation": "FLY"}, "operation must be one of ANY"),
        ({**ALL_ANY, "pattern_type": "MATCH"}, "MATCH needs a resource_name"),
        ({**ALL_ANY, "principle": "User:frank"}, "unknown filter parameter(s) principle"),
    ],
)
async def test_a_refused_delete_filter_is_400_naming_the_problem_and_deletes_nothing(
    secured: Api, query: dict[str, str], problem: str
) -> None:
    await add_user(secured, "frank")
    await allow(secured, "User:frank", "TOPIC", "t", "READ")
    response = await secured.client.delete(f"{secured.cluster}/acls", params=query, headers=ADMIN)
    await refused_acl(response, problem)
    assert len(await SecurityStore(secured.node.store).acls()) == 1


async def test_a_refused_list_filter_is_400_naming_the_problem(secured: Api) -> None:
    response = await secured.client.get(f"{secured.cluster}/acls", params={"operation": "FLY"}, headers=ADMIN)
    await refused_acl(response, "operation must be one of ANY")


async def test_a_password_utf8_cannot_encode_is_422(secured: Api) -> None:
    body = b'{"name": "grace", "password": "\\ud800"}'
    headers = {**ADMIN, "Content-Type": "application/json"}
    response = await secured.client.post(f"{secured.cluster}/users", data=body, headers=headers)
    assert "password" in (await error_of(response, 422))["message"]
    assert "grace" not in await SecurityStore(secured.node.store).users()


async def test_the_document_states_the_scheme_and_the_routes_that_need_none(secured: Api, open_api: Api) -> None:
    document = await (await secured.client.get("/openapi.json")).json()
    [(name, scheme)] = document["components"]["securitySchemes"].items()
    assert (name, scheme["type"], scheme["scheme"]) == ("basic", "http", "basic")
    assert document["security"] == [{"basic": []}]
    assert document["paths"]["/healthz"]["get"]["security"] == []
    assert "security" not in document["paths"]["/v3/clusters/{cluster_id}/topics"]["get"]
    plain = await (await open_api.client.get("/openapi.json")).json()
    assert "security" not in plain and "securitySchemes" not in plain["components"]


async def test_creating_a_topic_that_exists_tells_only_a_caller_who_may_see_it(secured: Api) -> None:
    await create_topic(secured, "taken")
    await add_user(secured, "heidi")
    await allow(secured, "User:heidi", "TOPIC", "taken", "CREATE")
    body = {"topic_name": "taken", "partitions_count": 1, "replication_factor": 1}
    response = await secured.client.post(f"{secured.cluster}/topics", json=body, headers=basic("heidi"))
    assert (await error_of(response, 403))["error"] == "TOPIC_AUTHORIZATION_FAILED"
    await allow(secured, "User:heidi", "TOPIC", "taken", "DESCRIBE")
    response = await secured.client.post(f"{secured.cluster}/topics", json=body, headers=basic("heidi"))
    assert (await error_of(response, 400))["error"] == "TOPIC_ALREADY_EXISTS"
