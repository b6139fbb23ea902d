"""``POST /v3/clusters/{c}/acls:batch``: create several ACLs, all or nothing (REST Proxy's batchCreateKafkaAcls).

Every binding is checked (``acl_codec.binding_from_wire``, the check a single create
makes) before any is written, so one bad entry refuses the batch with nothing stored:
400 ``InvalidAcl``, as the spec answers it, for a bad binding and a body of the wrong shape.
The store has no multi-key transaction, so the writes go one by one; if the store
fails part way, the bindings this call created are removed again before the error
is answered, so a failed batch leaves the ACLs as they were (a binding that existed
before the call is never removed: creating it again changed nothing). Bindings reach
the authorizer through the same security view as single creates.
"""

from __future__ import annotations

from aiohttp import web
from pydantic import BaseModel, ConfigDict

from broker.errors import InvalidAcl
from broker.security.acl import AclBinding
from broker.security.acl_codec import binding_from_wire, binding_to_wire
from broker.server.api_routes import CLUSTER, JSON, Body, Operation, Reply, RouteTable
from broker.server.authorization import audit, client_host, principal_of
from broker.server.params import node_of, read_model
from broker.server.routes_security import TAGS, AclBody

routes = RouteTable()


class CreateAclRequestDataList(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data: list[AclBody]


async def _remove_created(request: web.Request, created: list[AclBinding]) -> None:
    for binding in created:
        await node_of(request).security.records.remove_acl(binding)


@routes.post(
    "/v3/clusters/{cluster_id}/acls:batch",
    Operation(
        "Create several ACLs, all or nothing",
        (Reply(201, "created"),),
        (CLUSTER,),
        Body({JSON: CreateAclRequestDataList}),
        tags=TAGS,
    ),
)
async def create_acls(request: web.Request) -> web.Response:
    node = node_of(request)
    body = await read_model(request, CreateAclRequestDataList, refusal=InvalidAcl)
    bindings = [binding_from_wire(entry.model_dump(mode="json")) for entry in body.data]
    store = node.security.records
    created: list[AclBinding] = []
    try:
        for binding in bindings:
            if await store.add_acl(binding):
                created.append(binding)
    except BaseException:
        await _remove_created(request, created)
        raise
    await node.security.catch_up()
    audit.info(
        "audit.acls_created",
        principal=str(principal_of(request)),
        source=client_host(request),
        created=len(created),
        acls=[binding_to_wire(binding) for binding in bindings],
    )
    return web.Response(status=201)
