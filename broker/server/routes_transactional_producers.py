"""Transactions over HTTP: a Kafka producer's transaction calls, one route each (highwater's own paths).

An HTTP producer makes the calls a Kafka producer makes, in the same order, served by
the same coordinator (``broker.transactions.coordinator``) and verified by the same
partition leaders (KIP-890):

1. ``POST …/transactions/{id}/producer-id`` (InitProducerId): the id's new incarnation,
   which fences the previous one and finishes or aborts what it left open;
2. ``POST …/transactions/{id}/partitions`` (AddPartitionsToTxn), before the first batch
   of the transaction to a partition;
3. ``POST …/partitions/{p}/batches?transactional_id={id}``: the transactional batches;
4. offsets with the output: ``POST …/transactions/{id}/consumer-groups`` (AddOffsetsToTxn),
   then ``POST …/consumer-groups/{g}/offsets`` naming the transactional id (TxnOffsetCommit);
5. ``POST …/transactions/{id}:commit`` or ``:abort`` (EndTxn).

Why these routes, and no single request that names a transactional id: a transaction's
state lives in its coordinator and is written with acks=all before any answer, as for
Kafka clients; the HTTP producer holds only its producer id and epoch, so a retried call,
a restarted producer and a zombie are told apart and fenced exactly as Kafka's are. A
one-request transaction would have the broker begin, write and end on the caller's
behalf, and a failure halfway would leave the caller unable to tell a commit from an
abort; with the calls, the caller always knows which call's answer it lacks.

Who may call: WRITE on the TRANSACTIONAL_ID for each (Kafka's rule; DESCRIBE to describe
one); adding partitions also needs WRITE on each topic, adding a group's offsets READ on
the group, both checked in the handler (the names are in the body). Each call runs on
the id's coordinator; any broker forwards it there. The listing asks every broker for the
ids it coordinates and shows those the caller may DESCRIBE. The describe route takes ids without
``:`` (so ``…/{id}:commit`` is never a describe); Kafka's DescribeTransactions takes any.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field

from broker.errors import InvalidRequest
from broker.security.acl import AclOperation, Resource
from broker.server.api_routes import CLUSTER, JSON, Body, Operation, Reply, RouteTable, path_param, query_param
from broker.server.authorization import may, require
from broker.server.coordinator_forwarding import forward_to_coordinator, forwarded, from_every_coordinator
from broker.server.params import JsonInt, node_of, read_model
from broker.server.partition_ids import PartitionId
from broker.server.responses import ResourceList, ResponseBody
from broker.server.routes_internal import internal
from broker.topics.policy import OFFSETS_TOPIC
from broker.transactions.metadata import NO_START, TransactionMetadata, TxnState

routes = RouteTable()

TRANSACTION = "/v3/clusters/{cluster_id}/transactions/{transactional_id}"
TRANSACTIONAL_ID = path_param("transactional_id", {"type": "string", "minLength": 1}, "the producer's transactional id")
TAGS = ("Transactions",)
STATE_FILTER = query_param(
    "state",
    {"type": "string", "enum": [state.value for state in TxnState]},
    "only transactions in this state (repeatable)",
)
INT16_MAX = 32767
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000
"""Kafka producers' default ``transaction.timeout.ms``."""


class InitBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    transaction_timeout_ms: JsonInt = Field(
        DEFAULT_TRANSACTION_TIMEOUT_MS, ge=1, description="an open transaction is aborted this long after it began"
    )


class ProducerBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    producer_id: JsonInt = Field(ge=0)
    producer_epoch: JsonInt = Field(ge=0, le=INT16_MAX)


class TransactionPartition(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    topic_name: str = Field(min_length=1)
    partition_id: PartitionId


class PartitionsBody(ProducerBody):
    partitions: list[TransactionPartition] = Field(min_length=1)


class GroupBody(ProducerBody):
    group_id: str = Field(min_length=1)


class TransactionalProducer(ResponseBody):
    cluster_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int


class Transaction(ResponseBody):
    cluster_id: str
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    transaction_timeout_ms: int
    partitions: list[TransactionPartition]
    transaction_start_time_ms: int | None


Handler = Callable[[web.Request, str], Awaitable[web.Response]]


def on_coordinator(handler: Handler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """Run ``handler`` on the transactional id's coordinator: here, or forwarded there once."""

    async def route(request: web.Request) -> web.StreamResponse:
        node = node_of(request)
        transactional_id = request.match_info["transactional_id"]
        coordinator = await node.transactions.coordinator_id(transactional_id)
        url = node.catalog.broker_url(coordinator)
        if coordinator == node.node_id or forwarded(request) or url is None:
            return await handler(request, transactional_id)
        return await forward_to_coordinator(request, url, "transaction coordinator")

    return route


def operation(summary: str, reply: Reply, body: type[BaseModel] | None = None) -> Operation:
    return Operation(summary, (reply,), (CLUSTER, TRANSACTIONAL_ID), Body({JSON: body}) if body else None, tags=TAGS)


def _producer(request: web.Request, transactional_id: str, producer_id: int, epoch: int) -> web.Response:
    node = node_of(request)
    body = {
        "cluster_id": node.cluster_id,
        "transactional_id": transactional_id,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }
    return web.json_response(body)


@routes.post(
    TRANSACTION + "/producer-id",
    operation(
        "Initialise the id's producer (InitProducerId): a new epoch that fences the previous incarnation, "
        "whose open transaction is aborted (or, if it was committing, completed) first",
        Reply(200, "the producer id and epoch to stamp batches with", {JSON: TransactionalProducer}),
        InitBody,
    ),
)
@on_coordinator
async def init_producer(request: web.Request, transactional_id: str) -> web.Response:
    body = await read_model(request, InitBody)
    producer_id, epoch = await node_of(request).transactions.init_producer_id(
        transactional_id, body.transaction_timeout_ms
    )
    return _producer(request, transactional_id, producer_id, epoch)


@routes.post(
    TRANSACTION + "/partitions",
    operation(
        "Add partitions to the producer's transaction (AddPartitionsToTxn), before its first batch to each; "
        "the first call begins the transaction",
        Reply(200, "added", {JSON: TransactionalProducer}),
        PartitionsBody,
    ),
)
@on_coordinator
async def add_partitions(request: web.Request, transactional_id: str) -> web.Response:
    body = await read_model(request, PartitionsBody)
    for topic in sorted({p.topic_name for p in body.partitions}):
        require(request, AclOperation.WRITE, Resource.topic(topic))
    asked = [(p.topic_name, p.partition_id) for p in body.partitions]
    await node_of(request).transactions.add_partitions(transactional_id, body.producer_id, body.producer_epoch, asked)
    return _producer(request, transactional_id, body.producer_id, body.producer_epoch)


@routes.post(
    TRANSACTION + "/consumer-groups",
    operation(
        "Add a consumer group's offsets to the transaction (AddOffsetsToTxn); then commit them with "
        "POST …/consumer-groups/{g}/offsets naming the transactional id: they apply when the transaction commits",
        Reply(200, "added", {JSON: TransactionalProducer}),
        GroupBody,
    ),
)
@on_coordinator
async def add_group(request: web.Request, transactional_id: str) -> web.Response:
    body = await read_model(request, GroupBody)
    require(request, AclOperation.READ, Resource.group(body.group_id))
    node = node_of(request)
    partition = await node.groups.offsets_partition(body.group_id)
    await node.transactions.add_partitions(
        transactional_id, body.producer_id, body.producer_epoch, [(OFFSETS_TOPIC, partition)]
    )
    return _producer(request, transactional_id, body.producer_id, body.producer_epoch)


def _ending(commit: bool) -> Handler:
    async def end(request: web.Request, transactional_id: str) -> web.Response:
        body = await read_model(request, ProducerBody)
        await node_of(request).transactions.end_transaction(
            transactional_id, body.producer_id, body.producer_epoch, commit
        )
        return _producer(request, transactional_id, body.producer_id, body.producer_epoch)

    return end


commit = routes.post(
    TRANSACTION + ":commit",
    operation(
        "Commit the producer's transaction (EndTxn): answered once the decision is durable; the COMMIT markers "
        "reach its partitions just after, and read_committed readers see its records then",
        Reply(200, "committed", {JSON: TransactionalProducer}),
        ProducerBody,
    ),
)(on_coordinator(_ending(commit=True)))

abort = routes.post(
    TRANSACTION + ":abort",
    operation(
        "Abort the producer's transaction (EndTxn): its records are never shown to read_committed readers",
        Reply(200, "aborted", {JSON: TransactionalProducer}),
        ProducerBody,
    ),
)(on_coordinator(_ending(commit=False)))


@routes.get(
    "/v3/clusters/{cluster_id}/transactions/{transactional_id:[^{}/:]+}",
    operation(
        "Describe the id's producer and its transaction (DescribeTransactions)",
        Reply(200, "the transaction", {JSON: Transaction}),
    ),
)
@on_coordinator
async def describe(request: web.Request, transactional_id: str) -> web.Response:
    node = node_of(request)
    return web.json_response(
        {"cluster_id": node.cluster_id, **transaction_body(await node.transactions.state_of(transactional_id))}
    )


@routes.get(
    "/v3/clusters/{cluster_id}/transactions",
    Operation(
        "List the cluster's transactional ids and their transactions (ListTransactions): each broker lists "
        "those it coordinates; only ids the caller may DESCRIBE",
        (Reply(200, "transactions", {JSON: ResourceList[Transaction]}),),
        (CLUSTER, STATE_FILTER),
        tags=TAGS,
    ),
)
async def list_transactions(request: web.Request) -> web.Response:
    node = node_of(request)
    states = set(request.query.getall("state", []))
    unknown = sorted(states - {state.value for state in TxnState})
    if unknown:
        raise InvalidRequest(f"state {unknown[0]!r} is not one of {[state.value for state in TxnState]}")
    local = [transaction_body(state) for state in node.transactions.describe()]
    bodies = await from_every_coordinator(request, local, "/internal/transactions")
    visible = [
        {"cluster_id": node.cluster_id, **body}
        for body in bodies
        if (not states or body["state"] in states)
        and may(request, AclOperation.DESCRIBE, Resource.transactional_id(body["transactional_id"]))
    ]
    visible.sort(key=lambda body: body["transactional_id"])
    path = f"{node.advertised_url}/v3/clusters/{node.cluster_id}/transactions"
    return web.json_response({"kind": "KafkaTransactionList", "metadata": {"self": path}, "data": visible})


@routes.get("/internal/transactions", internal("The transactional ids this broker coordinates"))
async def local_transactions(request: web.Request) -> web.Response:
    return web.json_response({"data": [transaction_body(state) for state in node_of(request).transactions.describe()]})


def transaction_body(state: TransactionMetadata) -> dict:
    return {
        "transactional_id": state.transactional_id,
        "producer_id": state.producer_id,
        "producer_epoch": state.producer_epoch,
        "state": state.state.value,
        "transaction_timeout_ms": state.timeout_ms,
        "partitions": [{"topic_name": t, "partition_id": p} for t, p in sorted(state.partitions)],
        "transaction_start_time_ms": None if state.started_ms == NO_START else state.started_ms,
    }
