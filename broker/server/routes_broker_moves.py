"""Emptying a broker and spreading replicas over all of them: highwater's own writes, ALTER on the cluster.

- ``POST /v3/clusters/{c}/brokers:drain`` with ``{"broker_id": b}`` marks broker ``b`` drained, so the controller
  places no new replica on it (topic creation, added partitions, balancing), and moves every
  replica off it in one reassignment (``move_plans.drain``); answered 202 with the moves it
  started and the plan's rack warnings. Asked again, it moves what is left (a partition
  created before the mark). A broker that is not registered may be drained while a
  partition still names it: a dead machine's replicas move as well. The broker may be
  stopped once no partition names it (``GET …/brokers/{b}/partition-replicas`` is empty).
- ``POST …/brokers:undrain`` with ``{"broker_id": b}`` lets it take new replicas again (moves under way go on;
  cancel them with ``reassignment:alter``); 200 saying whether it was being drained.
- ``POST …/brokers:balance`` with ``{"tolerance": 0.1, "max_moves": 10}`` starts one bounded
  step of ``move_plans.balance`` over the live brokers that are not being drained, and once
  replica counts are even, of ``move_plans.even_leaders`` (reorders, each partition's new
  first replica elected); 202 with the moves, an empty ``data`` once every broker is within
  the tolerance of the mean in both.

Each is the controller's decision, under the lock every controller operation takes, so a
plan never interleaves with a topic creation.
"""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, StrictFloat

from broker.cluster.reassignment import StartedMoves
from broker.server.admin_bodies import StartedReassignments, list_of, reassignment_body
from broker.server.api_routes import CLUSTER, JSON, Body, Operation, Reply, RouteTable
from broker.server.host import HttpHost
from broker.server.params import INT32_MAX, JsonInt, node_of, read_model
from broker.server.resources import cluster_path
from broker.server.responses import ResponseBody

BROKERS = "/v3/clusters/{cluster_id}/brokers"
routes = RouteTable()


class BalanceRequest(BaseModel):
    """How close to the mean replica count every broker must come, and the most moves one step starts."""

    model_config = ConfigDict(extra="forbid")

    tolerance: StrictFloat = Field(0.1, ge=0, lt=1)
    max_moves: JsonInt = Field(10, ge=1, le=1000)


class BrokerRequest(BaseModel):
    """The broker a drain or its end names."""

    model_config = ConfigDict(extra="forbid")

    broker_id: JsonInt = Field(ge=0, le=INT32_MAX)


class DrainEnded(ResponseBody):
    kind: str
    cluster_id: str
    broker_id: int
    was_draining: bool


def _started(node: HttpHost, started: StartedMoves) -> dict:
    path = f"{cluster_path(node)}/topics/-/partitions/-/reassignment"
    items = [reassignment_body(node, record) for record in started.records]
    return list_of("KafkaReassignmentList", node, path, items) | {"rack_warnings": started.rack_warnings}


@routes.post(
    BROKERS + ":drain",
    Operation(
        "Mark a broker drained (no new replicas) and move every replica off it",
        (Reply(202, "the moves started, and where the plan had to share a rack", {JSON: StartedReassignments}),),
        (CLUSTER,),
        Body({JSON: BrokerRequest}),
    ),
)
async def drain_broker(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, BrokerRequest)
    started = await node.controller_gateway.drain_broker(body.broker_id)
    return web.json_response(_started(node, started), status=202)


@routes.post(
    BROKERS + ":undrain",
    Operation(
        "Let a drained broker take new replicas again",
        (Reply(200, "whether it was being drained", {JSON: DrainEnded}),),
        (CLUSTER,),
        Body({JSON: BrokerRequest}),
    ),
)
async def undrain_broker(request: web.Request) -> web.Response:
    node = node_of(request)
    broker_id = (await read_model(request, BrokerRequest)).broker_id
    was_draining = await node.controller_gateway.undrain_broker(broker_id)
    body = {"kind": "KafkaBrokerDrainEnded", "cluster_id": node.cluster_id, "broker_id": broker_id}
    return web.json_response(body | {"was_draining": was_draining})


@routes.post(
    BROKERS + ":balance",
    Operation(
        "Start one bounded step of moving replicas towards the mean replica count",
        (Reply(202, "the moves started; none once balanced", {JSON: StartedReassignments}),),
        (CLUSTER,),
        Body({JSON: BalanceRequest}, required=False),
    ),
)
async def balance_brokers(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, BalanceRequest) if request.body_exists else BalanceRequest()
    started = await node.controller_gateway.balance_brokers(body.tolerance, body.max_moves)
    return web.json_response(_started(node, started), status=202)
