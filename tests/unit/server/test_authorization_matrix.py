"""The authorization matrix: every route of the API, as every kind of caller, against one real broker.

Each route has a recipe: the request, the ACLs Kafka's rules say it needs (written here
by hand, not read from ``route_access``, so the table is checked against the rules) and
what an allowed caller gets. Every recipe is called as:

* ``anonymous`` (no credentials) and ``wrong_password``: 401, except routes anyone may call;
* ``no_acl``, a user without any ACL: 403 where an ACL is needed (a topic delete answers
  like a missing topic), the route's answer where none is;
* ``denied``: the exact ACLs plus a DENY of the same operations: 403 (DENY wins);
* ``exact`` (exactly the needed ACLs, LITERAL), ``prefixed`` (the same as PREFIXED
  patterns) and ``super`` (a super user): the route's answer;
* ``broker`` (a broker token), on the broker-only routes: anything but 401 and 403.

The refused callers go first, against the resources the ``exact`` caller uses next,
and the broker's state (store keys, log end offsets, groups) must be the same after
them as before: a refused request writes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from broker.cluster.security_store import SecurityStore
from broker.node.broker_node import BrokerNode
from broker.record.codec import RecordInput, encode_batch
from broker.security.acl import AclBinding, AclOperation, AclPermission, PatternType, ResourceType
from broker.security.broker_token import broker_authorization
from broker.security.quota_limits import QuotaLimits
from broker.security.scram import new_credential
from broker.server.app import ROUTE_TABLES, create_app
from broker.server.route_access import ROUTE_ACCESS
from tests.unit.server.conftest import broker_settings, wait_until_ready

PASSWORD = "correct horse"
ADMIN = "admin"
NOBODY = "nobody"
REFUSED = ("anonymous", "wrong_password", "no_acl", "denied")
ALLOWED = ("exact", "prefixed", "super")
BATCH = "application/vnd.kafka.batch.v2"
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
TXN = ResourceType.TRANSACTIONAL_ID
Need = tuple[ResourceType, str, AclOperation]


@dataclass(frozen=True)
class Names:
    """The resources one caller of one recipe works on: its own, so a delete leaves the others intact."""

    recipe: int
    persona: str

    @property
    def topic(self) -> str:
        return f"m{self.recipe}-{self.persona}"

    group = topic

    @property
    def victim(self) -> str:
        return f"victim{self.recipe}-{self.persona}"


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    json: Any = None
    data: bytes | None = None
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


class Matrix:
    """The broker, an admin client, and the calls the recipes make."""

    def __init__(self, client: TestClient, node: BrokerNode) -> None:
        self.client = client
        self.node = node
        self.store = SecurityStore(node.store)
        self.producers: dict[str, dict[str, int]] = {}
        """Transactional id → the ``producer_id`` and ``producer_epoch`` its setup initialised."""

    @property
    def cluster(self) -> str:
        return f"/v3/clusters/{self.node.cluster_id}"

    async def call(self, call: Call, headers: dict[str, str]) -> int:
        response = await self.client.request(
            call.method,
            call.path,
            json=call.json,
            data=call.data,
            params=call.params,
            headers={**call.headers, **headers},
        )
        await response.read()
        return response.status

    async def admin(self, call: Call, expected: int) -> None:
        status = await self.call(call, basic(ADMIN, PASSWORD))
        assert status == expected, f"setup {call.method} {call.path}: {status}"

    async def topic(self, name: str) -> None:
        body = {"topic_name": name, "partitions_count": 1, "replication_factor": 1}
        await self.admin(Call("POST", f"{self.cluster}/topics", json=body), 201)
        await self.admin(Call("POST", f"{self.cluster}/topics/{name}/records", json={"value": {"data": "x"}}), 200)

    async def committed(self, names: Names) -> None:
        await self.topic(names.topic)
        body = {"offsets": [{"topic_name": names.topic, "partition_id": 0, "offset": 1}]}
        await self.admin(Call("POST", f"{self.cluster}/consumer-groups/{names.group}/offsets", json=body), 200)

    async def transactional(self, names: Names, *, partition: bool = False, group: bool = False) -> None:
        """Initialise the transactional id ``names.topic`` (its topic made first); then, as asked, add
        the topic's partition 0 or the group ``names.group`` to its transaction."""
        await self.topic(names.topic)
        path = f"{self.cluster}/transactions/{names.topic}"
        response = await self.client.post(f"{path}/producer-id", json={}, headers=basic(ADMIN, PASSWORD))
        assert response.status == 200, await response.text()
        answer = await response.json()
        producer = {key: answer[key] for key in ("producer_id", "producer_epoch")}
        self.producers[names.topic] = producer
        if partition:
            added = {**producer, "partitions": [{"topic_name": names.topic, "partition_id": 0}]}
            await self.admin(Call("POST", f"{path}/partitions", json=added), 200)
        if group:
            await self.admin(Call("POST", f"{path}/consumer-groups", json={**producer, "group_id": names.group}), 200)

    async def member(self, names: Names) -> None:
        await self.topic(names.topic)
        await self.admin(heartbeat(self, names, "member-1"), 200)

    async def settled(self) -> None:
        """Until this broker's security view holds every change written to the store so far."""
        _, revision = await self.node.store.list("/security/")
        async with asyncio.timeout(10):
            while self.node.security.view.snapshot.revision < revision:
                await self.node.security.view.wait_changed()

    async def fingerprint(self) -> tuple:
        keys: list[tuple[str, bytes]] = []
        for prefix in ("/topics/", "/partitions/", "/security/", "/producer-ids/"):
            items, _ = await self.node.store.list(prefix)
            keys.extend((item.key, item.value) for item in items)
        offsets = sorted((d.topic, d.partition, d.log_end_offset) for d in self.node.describer.metrics())
        groups = sorted(
            (
                state.membership.group_id,
                sorted((m, member.member_epoch) for m, member in state.membership.members.items()),
                sorted((tp, c.offset) for tp, c in state.offsets.items()),
            )
            for _, state in self.node.groups.local_groups()
        )
        return keys, offsets, groups


MEMBER_SESSION_TIMEOUT_MS = 3_600_000
"""Longer than any run: a member the matrix made is never expelled by the coordinator's
expiry loop while a recipe compares the broker's state before and after its refused
calls (with Kafka's 10 s default, an expiry landing in that window made the test fail
whenever the run was slow)."""


def heartbeat(matrix: Matrix, names: Names, member: str) -> Call:
    path = f"{matrix.cluster}/consumer-groups/{names.group}/consumers/{member}:heartbeat"
    body = {"member_epoch": 0, "subscribed_topics": [names.topic], "session_timeout_ms": MEMBER_SESSION_TIMEOUT_MS}
    return Call("POST", path, json=body)


Setup = Callable[[Matrix, Names], Awaitable[None]]


async def nothing(matrix: Matrix, names: Names) -> None:
    return None


async def topic_setup(matrix: Matrix, names: Names) -> None:
    await matrix.topic(names.topic)


async def committed_setup(matrix: Matrix, names: Names) -> None:
    await matrix.committed(names)


async def producer_setup(matrix: Matrix, names: Names) -> None:
    await matrix.transactional(names)


async def in_transaction_setup(matrix: Matrix, names: Names) -> None:
    await matrix.transactional(names, partition=True)


async def group_in_transaction_setup(matrix: Matrix, names: Names) -> None:
    await matrix.transactional(names, group=True)


async def member_setup(matrix: Matrix, names: Names) -> None:
    await matrix.member(names)


async def victim_user(matrix: Matrix, names: Names) -> None:
    await matrix.store.put_user(names.victim, new_credential(PASSWORD))


async def victim_quota(matrix: Matrix, names: Names) -> None:
    await matrix.store.set_quota(f"User:{names.victim}", QuotaLimits(1000, None))


async def victim_acl(matrix: Matrix, names: Names) -> None:
    await matrix.store.add_acl(
        AclBinding(TOPIC, names.topic, PatternType.LITERAL, "User:someone", "*", AclOperation.READ, AclPermission.ALLOW)
    )


@dataclass(frozen=True)
class Recipe:
    method: str
    route: str
    ok: int
    call: Callable[[Matrix, Names], Call]
    needs: Callable[[Names], list[Need]] = lambda names: []
    setup: Setup = nothing
    who: str = "authenticated"
    hidden: bool = False


def on_cluster(operation: AclOperation) -> Callable[[Names], list[Need]]:
    return lambda names: [(CLUSTER, "kafka-cluster", operation)]


def on_topic(operation: AclOperation) -> Callable[[Names], list[Need]]:
    return lambda names: [(TOPIC, names.topic, operation)]


def on_transaction(
    operation: AclOperation, *others: tuple[ResourceType, AclOperation]
) -> Callable[[Names], list[Need]]:
    """``operation`` on the transactional id (named like the recipe's topic), and each of ``others`` on the
    recipe's topic or group."""

    def needs(names: Names) -> list[Need]:
        return [(TXN, names.topic, operation), *((kind, names.topic, op) for kind, op in others)]

    return needs


def on_group(operation: AclOperation, topic_operation: AclOperation | None = None) -> Callable[[Names], list[Need]]:
    def needs(names: Names) -> list[Need]:
        extra = [(TOPIC, names.topic, topic_operation)] if topic_operation else []
        return [(GROUP, names.group, operation), *extra]

    return needs


C = "/v3/clusters/{cluster_id}"
T = C + "/topics/{topic_name}"
P = T + "/partitions/{partition_id}"
G = C + "/consumer-groups/{consumer_group_id}"
M = G + "/consumers/{consumer_id}"
X = C + "/transactions/{transactional_id}"
R, W, D = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE


def t(m: Matrix, n: Names) -> str:
    return f"{m.cluster}/topics/{n.topic}"


def g(m: Matrix, n: Names) -> str:
    return f"{m.cluster}/consumer-groups/{n.group}"


def x(m: Matrix, n: Names) -> str:
    return f"{m.cluster}/transactions/{n.topic}"


def transactional_batch(m: Matrix, n: Names) -> bytes:
    """The first batch of the transaction ``n.topic``'s setup opened (sequence 0)."""
    producer = m.producers[n.topic]
    return encode_batch(
        [RecordInput(None, b"v", [], 1_700_000_000_000)],
        producer_id=producer["producer_id"],
        producer_epoch=producer["producer_epoch"],
        base_sequence=0,
        is_transactional=True,
    )


def internal(method: str, route: str, path: str, broker_path: str | None = None, json: Any = None) -> Recipe:
    """A broker-only route: the refused callers aim at ``path``, the broker at the harmless ``broker_path``."""

    def call(m: Matrix, n: Names) -> Call:
        return Call(method, broker_path if n.persona == "broker" and broker_path else path, json=json)

    return Recipe(method, route, 0, call, who="brokers")


MARKERS_FOR_NO_PARTITION = {
    "transactional_id": "t",
    "producer_id": 1,
    "producer_epoch": 0,
    "committed": True,
    "coordinator_epoch": 0,
    "serial": 1,
    "partitions": [],
}
"""Harmless for a broker: a marker for no partition at all."""
VERIFY_NO_ID = {"transactional_id": "", "producer_id": 1, "producer_epoch": 0, "topic": "t", "partition": 0}
CONFIRM_NO_ID = {"transactional_id": "", "producer_id": 1, "serial": 1}
"""Harmless for a broker: an empty transactional id is refused before anything is looked up."""

DC, AC = AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS
ADMIN_RECIPES: tuple[Recipe, ...] = (
    Recipe(
        "GET",
        C + "/topics/-/configs",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/topics/-/configs"),
        setup=topic_setup,
    ),
    Recipe("GET", T + "/configs", 200, lambda m, n: Call("GET", f"{t(m, n)}/configs"), on_topic(DC), topic_setup),
    Recipe(
        "GET",
        T + "/configs/{name}",
        200,
        lambda m, n: Call("GET", f"{t(m, n)}/configs/retention.ms"),
        on_topic(DC),
        topic_setup,
    ),
    Recipe(
        "PUT",
        T + "/configs/{name}",
        204,
        lambda m, n: Call("PUT", f"{t(m, n)}/configs/max.message.bytes", json={"value": "2000000"}),
        on_topic(AC),
        topic_setup,
    ),
    Recipe(
        "DELETE",
        T + "/configs/{name}",
        204,
        lambda m, n: Call("DELETE", f"{t(m, n)}/configs/max.message.bytes"),
        on_topic(AC),
        topic_setup,
    ),
    Recipe(
        "POST",
        T + "/configs:alter",
        204,
        lambda m, n: Call(
            "POST", f"{t(m, n)}/configs:alter", json={"data": [{"name": "max.message.bytes", "value": "9000"}]}
        ),
        on_topic(AC),
        topic_setup,
    ),
    Recipe(
        "PATCH",
        T,
        200,
        lambda m, n: Call("PATCH", t(m, n), json={"partitions_count": 2}),
        on_topic(AclOperation.ALTER),
        topic_setup,
    ),
    Recipe(
        "GET",
        P + "/replicas",
        200,
        lambda m, n: Call("GET", f"{t(m, n)}/partitions/0/replicas"),
        on_topic(D),
        topic_setup,
    ),
    Recipe(
        "GET",
        P + "/replicas/{broker_id}",
        200,
        lambda m, n: Call("GET", f"{t(m, n)}/partitions/0/replicas/1"),
        on_topic(D),
        topic_setup,
    ),
    Recipe(
        "GET",
        C + "/brokers/{broker_id}/partition-replicas",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/brokers/1/partition-replicas"),
        setup=topic_setup,
    ),
    Recipe(
        "GET",
        C + "/topics/-/partitions/-/reassignment",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/topics/-/partitions/-/reassignment"),
        on_cluster(D),
    ),
    Recipe(
        "GET",
        T + "/partitions/-/reassignment",
        200,
        lambda m, n: Call("GET", f"{t(m, n)}/partitions/-/reassignment"),
        on_topic(D),
        topic_setup,
    ),
    Recipe(
        "GET",
        P + "/reassignment",
        404,
        lambda m, n: Call("GET", f"{t(m, n)}/partitions/0/reassignment"),
        on_topic(D),
        topic_setup,
    ),
    Recipe(
        "POST",
        C + "/topics/-/partitions/-/reassignment:alter",
        202,
        lambda m, n: Call(
            "POST",
            f"{m.cluster}/topics/-/partitions/-/reassignment:alter",
            json={"data": [{"topic_name": n.topic, "partition_id": 0, "replicas": [1]}]},
        ),
        on_cluster(AclOperation.ALTER),
        topic_setup,
    ),
    Recipe(
        "GET",
        C + "/brokers/{broker_id}/log-dirs",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/brokers/1/log-dirs"),
        on_cluster(AclOperation.DESCRIBE),
    ),
    Recipe(
        "POST",
        C + "/brokers:drain",
        404,
        lambda m, n: Call("POST", f"{m.cluster}/brokers:drain", json={"broker_id": 99}),
        on_cluster(AclOperation.ALTER),
    ),
    Recipe(
        "POST",
        C + "/brokers:undrain",
        200,
        lambda m, n: Call("POST", f"{m.cluster}/brokers:undrain", json={"broker_id": 99}),
        on_cluster(AclOperation.ALTER),
    ),
    Recipe(
        "POST",
        C + "/brokers:balance",
        202,
        lambda m, n: Call("POST", f"{m.cluster}/brokers:balance", json={"max_moves": 1}),
        on_cluster(AclOperation.ALTER),
    ),
    Recipe(
        "GET",
        M + "/assignments",
        200,
        lambda m, n: Call("GET", f"{g(m, n)}/consumers/member-1/assignments"),
        on_group(D),
        member_setup,
    ),
    Recipe(
        "GET",
        M + "/assignments/{topic_name}/partitions/{partition_id}",
        200,
        lambda m, n: Call("GET", f"{g(m, n)}/consumers/member-1/assignments/{n.topic}/partitions/0"),
        on_group(D, D),
        member_setup,
    ),
    Recipe(
        "GET", C + "/brokers/-/configs", 200, lambda m, n: Call("GET", f"{m.cluster}/brokers/-/configs"), on_cluster(DC)
    ),
    Recipe(
        "GET",
        C + "/brokers/{broker_id}/configs",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/brokers/1/configs"),
        on_cluster(DC),
    ),
    Recipe(
        "GET",
        C + "/brokers/{broker_id}/configs/{name}",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/brokers/1/configs/log.retention.ms"),
        on_cluster(DC),
    ),
    Recipe(
        "PUT",
        C + "/brokers/{broker_id}/configs/{name}",
        400,
        lambda m, n: Call("PUT", f"{m.cluster}/brokers/1/configs/log.retention.ms", json={"value": "1"}),
        on_cluster(AC),
    ),
    Recipe(
        "DELETE",
        C + "/brokers/{broker_id}/configs/{name}",
        400,
        lambda m, n: Call("DELETE", f"{m.cluster}/brokers/1/configs/log.retention.ms"),
        on_cluster(AC),
    ),
    Recipe(
        "POST",
        C + "/brokers/{broker_id}/configs:alter",
        204,
        lambda m, n: Call("POST", f"{m.cluster}/brokers/1/configs:alter", json={"data": []}),
        on_cluster(AC),
    ),
    Recipe("GET", C + "/broker-configs", 200, lambda m, n: Call("GET", f"{m.cluster}/broker-configs"), on_cluster(DC)),
    Recipe(
        "GET",
        C + "/broker-configs/{name}",
        404,
        lambda m, n: Call("GET", f"{m.cluster}/broker-configs/x"),
        on_cluster(DC),
    ),
    Recipe(
        "PUT",
        C + "/broker-configs/{name}",
        400,
        lambda m, n: Call("PUT", f"{m.cluster}/broker-configs/x", json={"value": "1"}),
        on_cluster(AC),
    ),
    Recipe(
        "DELETE",
        C + "/broker-configs/{name}",
        400,
        lambda m, n: Call("DELETE", f"{m.cluster}/broker-configs/x"),
        on_cluster(AC),
    ),
    Recipe(
        "POST",
        C + "/broker-configs:alter",
        204,
        lambda m, n: Call("POST", f"{m.cluster}/broker-configs:alter", json={"data": []}),
        on_cluster(AC),
    ),
    Recipe(
        "POST",
        C + "/acls:batch",
        201,
        lambda m, n: Call(
            "POST",
            f"{m.cluster}/acls:batch",
            json={
                "data": [
                    {
                        "resource_type": "TOPIC",
                        "resource_name": n.topic,
                        "pattern_type": "LITERAL",
                        "principal": "User:someone",
                        "host": "*",
                        "operation": "READ",
                        "permission": "ALLOW",
                    }
                ]
            },
        ),
        on_cluster(AclOperation.ALTER),
    ),
    internal(
        "POST",
        "/internal/controller/topics/{topic}/configs",
        "/internal/controller/topics/m0-exact/configs",
        "/internal/controller/topics/absent/configs",
        json={"changes": {"max.message.bytes": "9000"}},
    ),
    internal(
        "POST",
        "/internal/controller/broker-configs",
        "/internal/controller/broker-configs",
        json={"changes": {}},
    ),
    internal(
        "POST",
        "/internal/controller/brokers/{broker_id}/configs",
        "/internal/controller/brokers/1/configs",
        json={"changes": {}},
    ),
    internal(
        "POST",
        "/internal/controller/topics/{topic}/partitions",
        "/internal/controller/topics/m0-exact/partitions",
        "/internal/controller/topics/absent/partitions",
        json={"partitions_count": 5},
    ),
)
"""The admin operations' routes (configs, partition growth, replicas, reassignments)."""
V2 = "/consumers/{consumer_group_id}"
V2I = V2 + "/instances/{consumer_id}"


def v2i(n: Names) -> str:
    return f"/consumers/{n.group}/instances/i"


async def v2_instance_setup(matrix: Matrix, names: Names) -> None:
    await matrix.topic(names.topic)
    body = {"name": "i", "format": "json", "auto.offset.reset": "earliest"}
    await matrix.admin(Call("POST", f"/consumers/{names.group}", json=body), 200)


async def v2_assigned_setup(matrix: Matrix, names: Names) -> None:
    await v2_instance_setup(matrix, names)
    body = {"partitions": [{"topic": names.topic, "partition": 0}]}
    await matrix.admin(Call("POST", f"{v2i(names)}/assignments", json=body), 204)


def v2_partitions(n: Names) -> dict:
    return {"partitions": [{"topic": n.topic, "partition": 0}]}


def v2_offsets(n: Names) -> dict:
    return {"offsets": [{"topic": n.topic, "partition": 0, "offset": 0}]}


RECIPES: tuple[Recipe, ...] = (
    Recipe("GET", "/healthz", 200, lambda m, n: Call("GET", "/healthz"), who="anyone"),
    Recipe("GET", "/readyz", 200, lambda m, n: Call("GET", "/readyz"), who="anyone"),
    Recipe("GET", "/openapi.json", 200, lambda m, n: Call("GET", "/openapi.json"), who="anyone"),
    Recipe("GET", "/metrics", 200, lambda m, n: Call("GET", "/metrics"), on_cluster(D)),
    Recipe("GET", "/v3/clusters", 200, lambda m, n: Call("GET", "/v3/clusters")),
    Recipe("GET", C, 200, lambda m, n: Call("GET", m.cluster)),
    Recipe("GET", C + "/brokers", 200, lambda m, n: Call("GET", f"{m.cluster}/brokers")),
    Recipe("GET", C + "/brokers/{broker_id}", 200, lambda m, n: Call("GET", f"{m.cluster}/brokers/1")),
    Recipe("GET", C + "/topics", 200, lambda m, n: Call("GET", f"{m.cluster}/topics"), setup=topic_setup),
    Recipe(
        "POST",
        C + "/topics",
        201,
        lambda m, n: Call("POST", f"{m.cluster}/topics", json={"topic_name": n.topic, "partitions_count": 1}),
        on_topic(AclOperation.CREATE),
    ),
    Recipe("GET", T, 200, lambda m, n: Call("GET", t(m, n)), on_topic(D), topic_setup),
    Recipe(
        "DELETE", T, 204, lambda m, n: Call("DELETE", t(m, n)), on_topic(AclOperation.DELETE), topic_setup, hidden=True
    ),
    Recipe("GET", T + "/partitions", 200, lambda m, n: Call("GET", f"{t(m, n)}/partitions"), on_topic(D), topic_setup),
    Recipe("GET", P, 200, lambda m, n: Call("GET", f"{t(m, n)}/partitions/0"), on_topic(D), topic_setup),
    Recipe(
        "GET", P + "/offset", 200, lambda m, n: Call("GET", f"{t(m, n)}/partitions/0/offset"), on_topic(D), topic_setup
    ),
    Recipe(
        "POST",
        C + "/partitions:elect-preferred",
        200,
        lambda m, n: Call("POST", f"{m.cluster}/partitions:elect-preferred", json={}),
        on_cluster(AclOperation.ALTER),
    ),
    Recipe(
        "POST",
        T + "/records",
        200,
        lambda m, n: Call("POST", f"{t(m, n)}/records", json={"value": {"data": 1}}),
        on_topic(W),
        topic_setup,
    ),
    Recipe(
        "POST",
        T + "/records:batch",
        207,
        lambda m, n: Call("POST", f"{t(m, n)}/records:batch", json={"entries": [{"id": "a", "value": {"data": 1}}]}),
        on_topic(W),
        topic_setup,
    ),
    Recipe(
        "POST",
        P + "/batches",
        200,
        lambda m, n: Call(
            "POST",
            f"{t(m, n)}/partitions/0/batches",
            data=encode_batch([RecordInput(None, b"v", [], 1_700_000_000_000)]),
            headers={"Content-Type": BATCH},
        ),
        on_topic(W),
        topic_setup,
    ),
    Recipe(
        "POST",
        P + "/batches",
        200,
        lambda m, n: Call(
            "POST",
            f"{t(m, n)}/partitions/0/batches",
            data=transactional_batch(m, n),
            params={"transactional_id": n.topic},
            headers={"Content-Type": BATCH},
        ),
        on_transaction(W, (TOPIC, W)),
        in_transaction_setup,
    ),
    Recipe(
        "POST",
        X + "/producer-id",
        200,
        lambda m, n: Call("POST", f"{x(m, n)}/producer-id", json={"transaction_timeout_ms": 60_000}),
        on_transaction(W),
    ),
    Recipe(
        "POST",
        X + "/partitions",
        200,
        lambda m, n: Call(
            "POST",
            f"{x(m, n)}/partitions",
            json={**m.producers[n.topic], "partitions": [{"topic_name": n.topic, "partition_id": 0}]},
        ),
        on_transaction(W, (TOPIC, W)),
        producer_setup,
    ),
    Recipe(
        "POST",
        X + "/consumer-groups",
        200,
        lambda m, n: Call("POST", f"{x(m, n)}/consumer-groups", json={**m.producers[n.topic], "group_id": n.group}),
        on_transaction(W, (GROUP, R)),
        producer_setup,
    ),
    Recipe(
        "POST",
        X + ":commit",
        200,
        lambda m, n: Call("POST", f"{x(m, n)}:commit", json=m.producers[n.topic]),
        on_transaction(W),
        in_transaction_setup,
    ),
    Recipe(
        "POST",
        X + ":abort",
        200,
        lambda m, n: Call("POST", f"{x(m, n)}:abort", json=m.producers[n.topic]),
        on_transaction(W),
        in_transaction_setup,
    ),
    Recipe("GET", X, 200, lambda m, n: Call("GET", x(m, n)), on_transaction(D), producer_setup),
    Recipe("GET", C + "/transactions", 200, lambda m, n: Call("GET", f"{m.cluster}/transactions")),
    Recipe(
        "GET",
        P + "/records",
        200,
        lambda m, n: Call("GET", f"{t(m, n)}/partitions/0/records", params={"offset": "0"}),
        on_topic(R),
        topic_setup,
    ),
    Recipe(
        "POST",
        P + "/records:delete",
        200,
        lambda m, n: Call("POST", f"{t(m, n)}/partitions/0/records:delete", json={"before_offset": -1}),
        on_topic(AclOperation.DELETE),
        topic_setup,
    ),
    Recipe(
        "POST",
        C + "/producer-ids",
        200,
        lambda m, n: Call("POST", f"{m.cluster}/producer-ids"),
        on_topic(W),
        topic_setup,
    ),
    Recipe("POST", M + ":heartbeat", 200, lambda m, n: heartbeat(m, n, "joiner"), on_group(R, D), topic_setup),
    Recipe("GET", G + "/consumers", 200, lambda m, n: Call("GET", f"{g(m, n)}/consumers"), on_group(D), member_setup),
    Recipe("GET", M, 200, lambda m, n: Call("GET", f"{g(m, n)}/consumers/member-1"), on_group(D), member_setup),
    Recipe("DELETE", M, 204, lambda m, n: Call("DELETE", f"{g(m, n)}/consumers/member-1"), on_group(R), member_setup),
    Recipe("GET", G, 200, lambda m, n: Call("GET", g(m, n)), on_group(D), committed_setup),
    Recipe("DELETE", G, 204, lambda m, n: Call("DELETE", g(m, n)), on_group(AclOperation.DELETE), committed_setup),
    Recipe(
        "POST",
        G + "/offsets",
        200,
        lambda m, n: Call(
            "POST", f"{g(m, n)}/offsets", json={"offsets": [{"topic_name": n.topic, "partition_id": 0, "offset": 1}]}
        ),
        on_group(R, R),
        topic_setup,
    ),
    Recipe(
        "POST",
        G + "/offsets",
        200,
        lambda m, n: Call(
            "POST",
            f"{g(m, n)}/offsets",
            json={
                "offsets": [{"topic_name": n.topic, "partition_id": 0, "offset": 1}],
                "transactional_id": n.topic,
                **m.producers[n.topic],
            },
        ),
        on_transaction(W, (GROUP, R), (TOPIC, R)),
        group_in_transaction_setup,
    ),
    Recipe("GET", G + "/offsets", 200, lambda m, n: Call("GET", f"{g(m, n)}/offsets"), on_group(D), committed_setup),
    Recipe("GET", G + "/lags", 200, lambda m, n: Call("GET", f"{g(m, n)}/lags"), on_group(D), committed_setup),
    Recipe(
        "GET",
        G + "/lags/{topic_name}/partitions/{partition_id}",
        200,
        lambda m, n: Call("GET", f"{g(m, n)}/lags/{n.topic}/partitions/0"),
        on_group(D, D),
        committed_setup,
    ),
    Recipe(
        "GET", G + "/lag-summary", 200, lambda m, n: Call("GET", f"{g(m, n)}/lag-summary"), on_group(D), committed_setup
    ),
    Recipe(
        "GET",
        C + "/consumer-groups",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/consumer-groups"),
        setup=committed_setup,
    ),
    Recipe("GET", C + "/acls", 200, lambda m, n: Call("GET", f"{m.cluster}/acls"), on_cluster(D)),
    Recipe(
        "POST",
        C + "/acls",
        201,
        lambda m, n: Call(
            "POST",
            f"{m.cluster}/acls",
            json={
                "resource_type": "TOPIC",
                "resource_name": n.topic,
                "pattern_type": "LITERAL",
                "principal": "User:someone",
                "operation": "READ",
                "permission": "ALLOW",
            },
        ),
        on_cluster(AclOperation.ALTER),
    ),
    Recipe(
        "DELETE",
        C + "/acls",
        200,
        lambda m, n: Call(
            "DELETE",
            f"{m.cluster}/acls",
            params={
                "resource_type": "TOPIC",
                "resource_name": n.topic,
                "pattern_type": "ANY",
                "operation": "ANY",
                "permission": "ANY",
            },
        ),
        on_cluster(AclOperation.ALTER),
        victim_acl,
    ),
    Recipe("GET", C + "/users", 200, lambda m, n: Call("GET", f"{m.cluster}/users"), on_cluster(D)),
    Recipe(
        "POST",
        C + "/users",
        201,
        lambda m, n: Call("POST", f"{m.cluster}/users", json={"name": n.victim, "password": "pw"}),
        on_cluster(AclOperation.ALTER),
    ),
    Recipe(
        "DELETE",
        C + "/users/{user_name}",
        204,
        lambda m, n: Call("DELETE", f"{m.cluster}/users/{n.victim}"),
        on_cluster(AclOperation.ALTER),
        victim_user,
    ),
    Recipe(
        "GET",
        C + "/quotas",
        200,
        lambda m, n: Call("GET", f"{m.cluster}/quotas"),
        on_cluster(AclOperation.DESCRIBE_CONFIGS),
    ),
    Recipe(
        "POST",
        C + "/quotas",
        200,
        lambda m, n: Call(
            "POST", f"{m.cluster}/quotas", json={"principal": f"User:{n.victim}", "producer_byte_rate": 1000}
        ),
        on_cluster(AclOperation.ALTER_CONFIGS),
    ),
    Recipe(
        "DELETE",
        C + "/quotas/{principal}",
        204,
        lambda m, n: Call("DELETE", f"{m.cluster}/quotas/User:{n.victim}"),
        on_cluster(AclOperation.ALTER_CONFIGS),
        victim_quota,
    ),
    internal("POST", "/internal/fetch", "/internal/fetch"),
    internal("GET", "/internal/replication/stream", "/internal/replication/stream"),
    internal(
        "POST",
        "/internal/controller/topics",
        "/internal/controller/topics",
        json={"name": "planted", "partitions_count": 1, "replication_factor": 1},
    ),
    internal(
        "DELETE",
        "/internal/controller/topics/{topic}",
        "/internal/controller/topics/m0-exact",
        "/internal/controller/topics/absent",
    ),
    internal(
        "POST",
        "/internal/controller/controlled-shutdown/{broker_id}",
        "/internal/controller/controlled-shutdown/1",
        "/internal/controller/controlled-shutdown/99",
    ),
    internal("POST", "/internal/controller/elect-preferred", "/internal/controller/elect-preferred", json={}),
    internal("POST", "/internal/controller/reassignments", "/internal/controller/reassignments", json={"moves": []}),
    internal(
        "POST",
        "/internal/controller/drain/{broker_id}",
        "/internal/controller/drain/1",
        "/internal/controller/drain/99",
    ),
    internal("POST", "/internal/controller/undrain/{broker_id}", "/internal/controller/undrain/99"),
    internal(
        "POST", "/internal/controller/balance", "/internal/controller/balance", json={"tolerance": 0.1, "max_moves": 1}
    ),
    internal("GET", "/internal/partitions/{topic}", "/internal/partitions/m0-exact"),
    internal("GET", "/internal/groups", "/internal/groups"),
    internal("GET", "/internal/transactions", "/internal/transactions"),
    internal("POST", "/internal/controller/groups/offsets-topic", "/internal/controller/groups/offsets-topic"),
    internal(
        "POST",
        "/internal/controller/transactions/state-topic",
        "/internal/controller/transactions/state-topic",
    ),
    internal("POST", "/internal/txn-markers", "/internal/txn-markers", json=MARKERS_FOR_NO_PARTITION),
    internal("POST", "/internal/txn-verify", "/internal/txn-verify", json=VERIFY_NO_ID),
    internal("POST", "/internal/txn-confirm", "/internal/txn-confirm", json=CONFIRM_NO_ID),
    Recipe(
        "GET", G + "/lag-history", 200, lambda m, n: Call("GET", f"{g(m, n)}/lag-history"), on_group(D), committed_setup
    ),
    Recipe("GET", T + "/isr-events", 200, lambda m, n: Call("GET", f"{t(m, n)}/isr-events"), on_topic(D), topic_setup),
    Recipe("GET", C + "/activity", 200, lambda m, n: Call("GET", f"{m.cluster}/activity"), on_cluster(D)),
    Recipe(
        "GET",
        T + "/replica-offsets",
        200,
        lambda m, n: Call("GET", f"{t(m, n)}/replica-offsets"),
        on_topic(D),
        topic_setup,
    ),
    internal("GET", "/internal/console/activity", "/internal/console/activity"),
    internal("GET", "/internal/console/replica-offsets/{topic}", "/internal/console/replica-offsets/m0-exact"),
    Recipe(
        "GET", C + "/replica-offsets", 200, lambda m, n: Call("GET", f"{m.cluster}/replica-offsets"), setup=topic_setup
    ),
    internal("GET", "/internal/console/replica-offsets", "/internal/console/replica-offsets"),
    # The client follows the redirect: 200 is the console's page at its end.
    Recipe("GET", "/", 200, lambda m, n: Call("GET", "/"), who="anyone"),
    Recipe("GET", "/console/", 200, lambda m, n: Call("GET", "/console/"), who="anyone"),
    Recipe("GET", "/console", 200, lambda m, n: Call("GET", "/console"), who="anyone"),
    Recipe("GET", "/console/{path}", 200, lambda m, n: Call("GET", "/console/js/main.js"), who="anyone"),
    *ADMIN_RECIPES,
    Recipe(
        "POST",
        V2,
        200,
        lambda m, n: Call("POST", f"/consumers/{n.group}", json={"name": "fresh"}),
        on_group(R),
        topic_setup,
    ),
    Recipe("DELETE", V2I, 204, lambda m, n: Call("DELETE", v2i(n)), on_group(R), v2_instance_setup),
    Recipe(
        "POST",
        V2I + "/subscription",
        204,
        lambda m, n: Call("POST", f"{v2i(n)}/subscription", json={"topics": [n.topic]}),
        on_group(R, R),
        v2_instance_setup,
    ),
    Recipe(
        "GET",
        V2I + "/subscription",
        200,
        lambda m, n: Call("GET", f"{v2i(n)}/subscription"),
        on_group(R),
        v2_instance_setup,
    ),
    Recipe(
        "DELETE",
        V2I + "/subscription",
        204,
        lambda m, n: Call("DELETE", f"{v2i(n)}/subscription"),
        on_group(R),
        v2_instance_setup,
    ),
    Recipe(
        "POST",
        V2I + "/assignments",
        204,
        lambda m, n: Call("POST", f"{v2i(n)}/assignments", json=v2_partitions(n)),
        on_group(R, R),
        v2_instance_setup,
    ),
    Recipe(
        "GET",
        V2I + "/assignments",
        200,
        lambda m, n: Call("GET", f"{v2i(n)}/assignments"),
        on_group(R),
        v2_assigned_setup,
    ),
    Recipe(
        "POST",
        V2I + "/positions",
        204,
        lambda m, n: Call("POST", f"{v2i(n)}/positions", json=v2_offsets(n)),
        on_group(R, R),
        v2_assigned_setup,
    ),
    Recipe(
        "POST",
        V2I + "/positions/beginning",
        204,
        lambda m, n: Call("POST", f"{v2i(n)}/positions/beginning", json=v2_partitions(n)),
        on_group(R, R),
        v2_assigned_setup,
    ),
    Recipe(
        "POST",
        V2I + "/positions/end",
        204,
        lambda m, n: Call("POST", f"{v2i(n)}/positions/end", json=v2_partitions(n)),
        on_group(R, R),
        v2_assigned_setup,
    ),
    Recipe(
        "GET", V2I + "/records", 200, lambda m, n: Call("GET", f"{v2i(n)}/records"), on_group(R, R), v2_assigned_setup
    ),
    Recipe(
        "POST",
        V2I + "/offsets",
        204,
        lambda m, n: Call("POST", f"{v2i(n)}/offsets", json=v2_offsets(n)),
        on_group(R, R),
        v2_assigned_setup,
    ),
    Recipe(
        "GET",
        V2I + "/offsets",
        200,
        lambda m, n: Call("GET", f"{v2i(n)}/offsets", json=v2_partitions(n)),
        on_group(R, R),
        v2_assigned_setup,
    ),
)


def acl(names: Names, need: Need, pattern: PatternType, permission: AclPermission, user: str) -> AclBinding:
    """The binding granting (or denying) ``need``; the one CLUSTER resource only takes LITERAL ``kafka-cluster``."""
    kind, name, operation = need
    if kind is CLUSTER:
        pattern = PatternType.LITERAL
    elif pattern is PatternType.PREFIXED:
        name = name[: len(name) - 3]
    return AclBinding(kind, name, pattern, f"User:{user}", "*", operation, permission)


def user(recipe: int, persona: str) -> str:
    return f"{persona}-{recipe}"


async def grant(matrix: Matrix) -> None:
    """Every persona's user and ACLs, written to the store before the broker serves the matrix."""
    store = matrix.store
    credential = new_credential(PASSWORD)
    for name in (ADMIN, NOBODY):
        await store.put_user(name, credential)
    for index, recipe in enumerate(RECIPES):
        for persona in ("exact", "denied", "prefixed"):
            await store.put_user(user(index, persona), credential)
        own = Names(index, "exact")
        for need in recipe.needs(own):
            await store.add_acl(acl(own, need, PatternType.LITERAL, AclPermission.ALLOW, user(index, "exact")))
            await store.add_acl(acl(own, need, PatternType.LITERAL, AclPermission.ALLOW, user(index, "denied")))
            await store.add_acl(acl(own, need, PatternType.LITERAL, AclPermission.DENY, user(index, "denied")))
        prefixed = Names(index, "prefixed")
        for need in recipe.needs(prefixed):
            await store.add_acl(acl(prefixed, need, PatternType.PREFIXED, AclPermission.ALLOW, user(index, "prefixed")))
    await matrix.settled()


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": aiohttp.encode_basic_auth(username, password)}


def credentials(index: int, persona: str) -> dict[str, str]:
    if persona == "anonymous":
        return {}
    if persona == "wrong_password":
        return basic(ADMIN, "wrong")
    if persona == "no_acl":
        return basic(NOBODY, PASSWORD)
    if persona == "super":
        return basic(ADMIN, PASSWORD)
    return basic(user(index, persona), PASSWORD)


def expected(recipe: Recipe, persona: str, needs: list[Need]) -> int:
    if persona == "wrong_password":
        return 401
    if recipe.who == "anyone":
        return recipe.ok
    if persona == "anonymous":
        return 401
    if recipe.who == "brokers":
        return 403
    if persona in ALLOWED or not needs:
        return recipe.ok
    return 404 if recipe.hidden and persona == "no_acl" else 403


@pytest.fixture
async def matrix(tmp_path: Path) -> AsyncIterator[Matrix]:
    settings = broker_settings(
        tmp_path / "data",
        offsets_topic_num_partitions=1,
        transaction_state_num_partitions=1,
        security={"authentication": "basic", "super_users": [ADMIN], "failed_logins_per_minute": 10_000},
    )
    node = await BrokerNode.start(settings)
    try:
        async with TestClient(TestServer(create_app(node), host="127.0.0.1")) as client:
            await wait_until_ready(client)
            yield Matrix(client, node)
    finally:
        await node.stop()


def test_every_route_has_a_recipe() -> None:
    routes = {(route.method, route.documented_path) for table in ROUTE_TABLES for route in table.routes}
    assert routes == {(recipe.method, recipe.route) for recipe in RECIPES}
    assert routes == set(ROUTE_ACCESS)


async def test_every_route_as_every_caller(matrix: Matrix) -> None:
    await grant(matrix)
    mismatches: list[str] = []
    calls = 0
    for index, recipe in enumerate(RECIPES):
        target = Names(index, "exact")
        for persona in ALLOWED:
            await recipe.setup(matrix, Names(index, persona))
        before = await matrix.fingerprint()
        for persona in REFUSED:
            status = await matrix.call(recipe.call(matrix, target), credentials(index, persona))
            calls += 1
            want = expected(recipe, persona, recipe.needs(target))
            if status != want:
                mismatches.append(f"{recipe.method} {recipe.route} as {persona}: {status}, expected {want}")
        if recipe.who != "anyone":
            after = await matrix.fingerprint()
            if after != before:
                mismatches.append(f"{recipe.method} {recipe.route}: a refused caller changed the broker's state")
        if recipe.who == "brokers":
            header = {"Authorization": broker_authorization(matrix.node.node_id, matrix.node.broker_secret)}
            status = await matrix.call(recipe.call(matrix, Names(index, "broker")), header)
            calls += 1
            if status in (401, 403):
                mismatches.append(f"{recipe.method} {recipe.route} as broker: {status}")
            continue
        for persona in ALLOWED:
            status = await matrix.call(recipe.call(matrix, Names(index, persona)), credentials(index, persona))
            calls += 1
            want = expected(recipe, persona, recipe.needs(Names(index, persona)))
            if status != want:
                mismatches.append(f"{recipe.method} {recipe.route} as {persona}: {status}, expected {want}")
    assert mismatches == [], "\n".join(mismatches)
    assert calls >= len(RECIPES) * 5
