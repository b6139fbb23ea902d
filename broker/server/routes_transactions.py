"""Broker-to-broker routes of transactions (broker principals only, ``route_access``).

- ``POST /internal/txn-markers``: a transaction coordinator asks a partition leader to
  write one marker to each of its partitions; the answer names, per partition, the
  error that stopped it (null once written and acknowledged by the ISR);
- ``POST /internal/txn-verify``: a partition leader asks a transactional id's
  coordinator whether the partition is in the producer's open transaction (KIP-890),
  and learns the transaction's serial; an error body when it is not;
- ``POST /internal/txn-confirm``: a leader that took over an open transaction asks
  whether a marker's transaction is the one its coordinator is ending;
- ``POST /internal/controller/transactions/state-topic``: create ``__transaction_state``
  on the controller.
"""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from broker.record.control import TransactionMarker
from broker.server.api_routes import RouteTable
from broker.server.params import NODE_KEY, read_model
from broker.server.routes_internal import internal
from broker.transactions.coordinator import write_local_markers

routes = RouteTable()


class MarkerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    coordinator_epoch: int
    serial: int
    partitions: list[tuple[str, int]]


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    transactional_id: str
    producer_id: int
    producer_epoch: int
    topic: str
    partition: int


class ConfirmRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    transactional_id: str
    producer_id: int
    serial: int


@routes.post("/internal/txn-markers", internal("Write transaction markers to partitions led here", MarkerRequest))
async def write_markers(request: web.Request) -> web.Response:
    body = await read_model(request, MarkerRequest)
    marker = TransactionMarker(body.producer_id, body.producer_epoch, body.committed, body.coordinator_epoch)
    answers = await write_local_markers(
        request.app[NODE_KEY].replicas, marker, body.serial, body.transactional_id, list(body.partitions)
    )
    return web.json_response({"results": [[topic, partition, error] for (topic, partition), error in answers.items()]})


@routes.post("/internal/txn-verify", internal("Verify a partition is in a producer's open transaction", VerifyRequest))
async def verify(request: web.Request) -> web.Response:
    body = await read_model(request, VerifyRequest)
    serial = await request.app[NODE_KEY].transactions.verify(
        body.transactional_id, body.producer_id, body.producer_epoch, body.topic, body.partition
    )
    return web.json_response({"serial": serial})


@routes.post("/internal/txn-confirm", internal("Confirm the transaction a marker ends", ConfirmRequest))
async def confirm(request: web.Request) -> web.Response:
    body = await read_model(request, ConfirmRequest)
    confirmed = await request.app[NODE_KEY].transactions.confirm_marker(
        body.transactional_id, body.producer_id, body.serial
    )
    return web.json_response({"confirmed": confirmed})


@routes.post("/internal/controller/transactions/state-topic", internal("Create __transaction_state on the controller"))
async def create_state_topic(request: web.Request) -> web.Response:
    return web.json_response(await request.app[NODE_KEY].transactions.state_topic.create_on_controller())
