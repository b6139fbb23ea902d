"""ACLs, users and quotas over HTTP: the Confluent REST Proxy v3 ACL routes, and users and quotas beside them.

``/v3/clusters/{c}/acls`` takes and answers the REST Proxy's ``KafkaAcl`` shapes;
listing and deleting take its filter as query parameters (absent or ``ANY`` matches
anything; ``pattern_type=MATCH`` selects every binding that applies to the named
resource). Deleting needs the four enum parameters, as the spec makes them required, so
no request deletes every ACL unawares. A refused ACL, filter or body answers the spec's
400 (``InvalidAcl``), where other routes answer 422 for a body of the wrong shape. Users
are SCRAM-SHA-512 credentials made here from the password, which is never stored,
logged or answered. Quotas are Kafka's client quotas per principal.

Every change is written to the metadata store, which every broker follows, and logged
to the audit log with who made it and from where. A change answers once this broker
applies it (``NodeSecurity.catch_up``), so the caller's next request meets it. Who may call each route is in
``route_access`` (DESCRIBE / ALTER on the cluster; DESCRIBE_CONFIGS / ALTER_CONFIGS
for quotas).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic.config import JsonDict
from pydantic.json_schema import SkipJsonSchema

from broker.cluster.security_store import SecurityStore
from broker.errors import InvalidAcl, ResourceNotFound
from broker.security.acl import (
    CLUSTER_RESOURCE_NAME,
    MATCH,
    AclBinding,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from broker.security.acl_codec import DELETE_REQUIRED, binding_from_wire, binding_to_wire, filter_from_wire
from broker.security.principal import USER_NAME_PATTERN, USER_PRINCIPAL_PATTERN
from broker.security.quota_limits import limits_from_wire, limits_to_wire
from broker.security.scram import MECHANISM, MIN_ITERATIONS, new_credential
from broker.server.api_routes import (
    CLUSTER,
    JSON,
    Body,
    Operation,
    Param,
    Reply,
    RouteTable,
    Schema,
    path_param,
    query_param,
)
from broker.server.authorization import audit, client_host, principal_of
from broker.server.params import node_of, read_model
from broker.server.resources import cluster_path, list_body
from broker.server.responses import Metadata, ResourceList, ResponseBody

routes = RouteTable()
TAGS = ("Security",)
ACLS = "/v3/clusters/{cluster_id}/acls"
USERS = "/v3/clusters/{cluster_id}/users"
QUOTAS = "/v3/clusters/{cluster_id}/quotas"


ONLY_CLUSTER_NAME: JsonDict = {
    "if": {"properties": {"resource_type": {"const": "CLUSTER"}}},
    "then": {"properties": {"resource_name": {"const": CLUSTER_RESOURCE_NAME}}},
}
ONE_RATE_AT_LEAST: JsonDict = {"anyOf": [{"required": ["producer_byte_rate"]}, {"required": ["consumer_byte_rate"]}]}
ByteRate = Annotated[int, Field(gt=0)] | SkipJsonSchema[None]


def _left_out_by_default(schema: JsonDict) -> None:
    """A rate left out is no limit; its ``None`` default is not a value the schema allows, so it is not shown."""
    schema.pop("default", None)


class AclBody(BaseModel):
    """One ACL binding as the REST Proxy takes it; the one CLUSTER resource is named ``kafka-cluster``."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=ONLY_CLUSTER_NAME)

    resource_type: ResourceType
    resource_name: str = Field(min_length=1)
    pattern_type: PatternType
    principal: str = Field(pattern=r"^User:.+$", examples=["User:alice", "User:*"])
    host: str = Field("*", min_length=1)
    operation: AclOperation
    permission: AclPermission


class KafkaAcl(ResponseBody):
    kind: str
    metadata: Metadata
    cluster_id: str
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission


class DeletedAcls(ResponseBody):
    data: list[KafkaAcl]


class UserBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=USER_NAME_PATTERN)
    password: SecretStr = Field(min_length=1, description="hashed into a SCRAM-SHA-512 credential; never stored")

    @field_validator("password")
    @classmethod
    def _encodable(cls, value: SecretStr) -> SecretStr:
        try:
            value.get_secret_value().encode()
        except UnicodeEncodeError:
            raise ValueError("must be text that UTF-8 can encode (no lone surrogates)") from None
        return value


class User(ResponseBody):
    name: str
    mechanism: str
    iterations: int


class QuotaBody(BaseModel):
    """At least one of the two rates; a rate left out is no limit."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=ONE_RATE_AT_LEAST)

    principal: str = Field(pattern=USER_PRINCIPAL_PATTERN, examples=["User:alice"])
    producer_byte_rate: ByteRate = Field(
        None, description="bytes per second this principal may produce", json_schema_extra=_left_out_by_default
    )
    consumer_byte_rate: ByteRate = Field(
        None, description="bytes per second this principal may fetch", json_schema_extra=_left_out_by_default
    )

    @field_validator("producer_byte_rate", "consumer_byte_rate", mode="before")
    @classmethod
    def _not_null(cls, value: Any) -> Any:
        if value is None:
            raise ValueError("must be a positive integer; leave the field out for no limit")
        return value


class Quota(ResponseBody):
    principal: str
    producer_byte_rate: int | None
    consumer_byte_rate: int | None


class UserList(ResponseBody):
    data: list[User]


class QuotaList(ResponseBody):
    data: list[Quota]


def _choice(values: list[str]) -> Schema:
    return {"type": "string", "enum": [*values, "ANY"]}


FILTER_FIELDS: tuple[tuple[str, Schema, str], ...] = (
    ("resource_type", _choice([kind.value for kind in ResourceType]), "what kind of resource; ANY for all"),
    ("resource_name", {"type": "string", "minLength": 1}, "exact name (with MATCH: the resource they apply to)"),
    ("pattern_type", _choice([*(kind.value for kind in PatternType), MATCH]), "MATCH: every binding that applies"),
    ("principal", {"type": "string", "pattern": r"^User:.+$"}, "User:<name> or User:*"),
    ("host", {"type": "string", "minLength": 1}, "a host or *"),
    ("operation", _choice([operation.value for operation in AclOperation]), "an ACL operation; ANY for all"),
    ("permission", _choice([permission.value for permission in AclPermission]), "ALLOW or DENY; ANY for both"),
)
FILTER_PARAMS: tuple[Param, ...] = tuple(query_param(name, schema, text) for name, schema, text in FILTER_FIELDS)
DELETE_FILTER_PARAMS: tuple[Param, ...] = tuple(
    Param(name, "query", schema, f"{text}; required, so no request deletes every ACL unawares", True)
    if name in DELETE_REQUIRED
    else query_param(name, schema, text)
    for name, schema, text in FILTER_FIELDS
)
USER_NAME = path_param("user_name", {"type": "string", "pattern": USER_NAME_PATTERN}, "user name")
PRINCIPAL = path_param("principal", {"type": "string", "pattern": USER_PRINCIPAL_PATTERN}, "User:<name>")


def _store(request: web.Request) -> SecurityStore:
    return node_of(request).security.records


def _acl_body(request: web.Request, binding: AclBinding) -> dict[str, Any]:
    """The REST Proxy's ``AclData``: an ACL has no path of its own, so ``self`` is the listing that finds only it."""
    node = node_of(request)
    wire = binding_to_wire(binding)
    self_url = f"{node.advertised_url}{cluster_path(node)}/acls?{urlencode(wire)}"
    return {
        "kind": "KafkaAcl",
        "metadata": {"self": self_url, "resource_name": None},
        "cluster_id": node.cluster_id,
        **wire,
    }


def _audit(request: web.Request, event: str, **fields: Any) -> None:
    audit.info(event, principal=str(principal_of(request)), source=client_host(request), **fields)


@routes.get(
    ACLS,
    Operation(
        "List ACLs matching a filter",
        (Reply(200, "ACLs", {JSON: ResourceList[KafkaAcl]}),),
        (CLUSTER, *FILTER_PARAMS),
        tags=TAGS,
    ),
)
async def list_acls(request: web.Request) -> web.Response:
    node = node_of(request)
    bindings = await _store(request).acls(filter_from_wire(request.query))
    items = [_acl_body(request, binding) for binding in bindings]
    return web.json_response(list_body("KafkaAclList", node, f"{cluster_path(node)}/acls", items))


@routes.post(
    ACLS,
    Operation(
        "Create an ACL (creating one that exists changes nothing)",
        (Reply(201, "created", {JSON: KafkaAcl}),),
        (CLUSTER,),
        Body({JSON: AclBody}),
        tags=TAGS,
    ),
)
async def create_acl(request: web.Request) -> web.Response:
    body = await read_model(request, AclBody, refusal=InvalidAcl)
    binding = binding_from_wire(body.model_dump(mode="json"))
    created = await _store(request).add_acl(binding)
    await node_of(request).security.catch_up()
    _audit(request, "audit.acl_created", created=created, acl=binding_to_wire(binding))
    return web.json_response(_acl_body(request, binding), status=201)


@routes.delete(
    ACLS,
    Operation(
        "Delete the ACLs matching a filter (resource_type, pattern_type, operation and permission required; ANY "
        "for every value)",
        (Reply(200, "the deleted ACLs", {JSON: DeletedAcls}),),
        (CLUSTER, *DELETE_FILTER_PARAMS),
        tags=TAGS,
    ),
)
async def delete_acls(request: web.Request) -> web.Response:
    missing = [name for name in DELETE_REQUIRED if name not in request.query]
    if missing:
        raise InvalidAcl(
            f"deleting ACLs needs {', '.join(missing)} (ANY matches every value; all four ANY deletes every ACL)",
            missing=missing,
        )
    acl_filter = filter_from_wire(request.query)
    deleted = await _store(request).remove_acls(acl_filter)
    await node_of(request).security.catch_up()
    for binding in deleted:
        _audit(request, "audit.acl_deleted", acl=binding_to_wire(binding))
    return web.json_response({"data": [_acl_body(request, binding) for binding in deleted]})


def _user_body(name: str, iterations: int) -> dict[str, Any]:
    return {"name": name, "mechanism": MECHANISM, "iterations": iterations}


@routes.get(
    USERS,
    Operation(
        "List users (names and mechanisms; never credentials)",
        (Reply(200, "users", {JSON: UserList}),),
        (CLUSTER,),
        tags=TAGS,
    ),
)
async def list_users(request: web.Request) -> web.Response:
    users = await _store(request).users()
    return web.json_response({"data": [_user_body(name, users[name].iterations) for name in sorted(users)]})


@routes.post(
    USERS,
    Operation(
        "Create a user, or set a new password for one (201 created, 200 replaced)",
        (Reply(201, "created", {JSON: User}), Reply(200, "password replaced", {JSON: User})),
        (CLUSTER,),
        Body({JSON: UserBody}),
        tags=TAGS,
    ),
)
async def upsert_user(request: web.Request) -> web.Response:
    body = await read_model(request, UserBody)
    credential = new_credential(body.password.get_secret_value(), MIN_ITERATIONS)
    created = await _store(request).put_user(body.name, credential)
    await node_of(request).security.catch_up()
    _audit(request, "audit.user_created" if created else "audit.user_password_changed", user=body.name)
    return web.json_response(_user_body(body.name, credential.iterations), status=201 if created else 200)


@routes.delete(
    USERS + "/{user_name}", Operation("Delete a user", (Reply(204, "deleted"),), (CLUSTER, USER_NAME), tags=TAGS)
)
async def delete_user(request: web.Request) -> web.Response:
    name = request.match_info["user_name"]
    if not await _store(request).delete_user(name):
        raise ResourceNotFound(f"user {name!r} does not exist", user_name=name)
    await node_of(request).security.catch_up()
    _audit(request, "audit.user_deleted", user=name)
    return web.Response(status=204)


@routes.get(QUOTAS, Operation("List client quotas", (Reply(200, "quotas", {JSON: QuotaList}),), (CLUSTER,), tags=TAGS))
async def list_quotas(request: web.Request) -> web.Response:
    quotas = await _store(request).quotas()
    return web.json_response({"data": [{"principal": p, **limits_to_wire(quotas[p])} for p in sorted(quotas)]})


@routes.post(
    QUOTAS,
    Operation(
        "Set a principal's byte-rate quotas (replacing any it had)",
        (Reply(200, "set", {JSON: Quota}),),
        (CLUSTER,),
        Body({JSON: QuotaBody}),
        tags=TAGS,
    ),
)
async def set_quota(request: web.Request) -> web.Response:
    body = await read_model(request, QuotaBody)
    data = body.model_dump()
    principal = data.pop("principal")
    limits = limits_from_wire(data)
    await _store(request).set_quota(principal, limits)
    await node_of(request).security.catch_up()
    _audit(request, "audit.quota_set", quota_principal=principal, **limits_to_wire(limits))
    return web.json_response({"principal": principal, **limits_to_wire(limits)})


@routes.delete(
    QUOTAS + "/{principal}",
    Operation("Remove a principal's quotas", (Reply(204, "removed"),), (CLUSTER, PRINCIPAL), tags=TAGS),
)
async def remove_quota(request: web.Request) -> web.Response:
    principal = request.match_info["principal"]
    if not await _store(request).remove_quota(principal):
        raise ResourceNotFound(f"no quota is set for {principal!r}", principal=principal)
    await node_of(request).security.catch_up()
    _audit(request, "audit.quota_removed", quota_principal=principal)
    return web.Response(status=204)
