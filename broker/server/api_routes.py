"""Routes declared together with their OpenAPI description: a route cannot exist undocumented.

Each ``routes_*`` module fills a ``RouteTable`` with decorators that take the handler's
``Operation`` (summary, parameters, body, answers); ``app.create_app`` registers exactly
the routes of those tables and ``openapi.openapi_document`` describes exactly them. Bodies
are named by the pydantic models that validate them, so the schema a client reads is the
one the request is checked against.

Routes under ``/internal/`` are broker-to-broker: described here like any other, but left
out of the public document so no client tool or fuzzer is invited to call them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from aiohttp import web
from pydantic import BaseModel, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue

from broker.server.partition_ids import PARTITION_ID

if TYPE_CHECKING:
    from config.broker import BrokerSettings

Schema = dict[str, Any]
Content = Mapping[str, type[BaseModel] | Schema]
"""Media type to the model (or, for non-JSON bodies, the raw schema) of a body."""
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
INTERNAL_PREFIX = "/internal/"


@dataclass(frozen=True, slots=True)
class ApiLimits:
    """The limits this broker enforces, stated in its document so a valid request is never refused for them."""

    max_request_bytes: int
    max_batch_entries: int
    fetch_max_wait_ms: int

    @classmethod
    def of(cls, settings: BrokerSettings) -> ApiLimits:
        return cls(settings.max_request_bytes, settings.max_batch_entries, settings.fetch_max_wait_ms)


@dataclass(frozen=True, slots=True)
class Param:
    """A path or query parameter; a schema that depends on broker settings is a function of ``ApiLimits``."""

    name: str
    where: Literal["path", "query"]
    schema: Schema | Callable[[ApiLimits], Schema]
    description: str
    required: bool = False
    """Path parameters always are; a query parameter only when this says so."""

    def document(self, limits: ApiLimits) -> Schema:
        schema = self.schema(limits) if callable(self.schema) else self.schema
        return {
            "name": self.name,
            "in": self.where,
            "required": self.where == "path" or self.required,
            "schema": schema,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class Reply:
    """One documented answer; every operation also documents the ``Error`` body as its default."""

    status: int
    description: str
    content: Content = field(default_factory=dict)
    links: Mapping[str, Schema] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Body:
    content: Content
    required: bool = True


@dataclass(frozen=True, slots=True)
class Operation:
    summary: str | Callable[[ApiLimits], str]
    replies: tuple[Reply, ...]
    params: tuple[Param, ...] = ()
    body: Body | None = None
    description: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ApiRoute:
    method: str
    path: str
    """As aiohttp takes it; a ``{name:regex}`` is documented as ``{name}``."""
    handler: Handler
    operation: Operation

    @property
    def documented_path(self) -> str:
        return web.DynamicResource(self.path).canonical if "{" in self.path else self.path

    @property
    def public(self) -> bool:
        return not self.path.startswith(INTERNAL_PREFIX)


class RouteTable:
    """The routes of one module, in registration order (aiohttp matches resources in that order)."""

    def __init__(self) -> None:
        self.routes: list[ApiRoute] = []

    def route(self, method: str, path: str, operation: Operation) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            self.routes.append(ApiRoute(method, path, handler, operation))
            return handler

        return register

    def get(self, path: str, operation: Operation) -> Callable[[Handler], Handler]:
        return self.route("GET", path, operation)

    def post(self, path: str, operation: Operation) -> Callable[[Handler], Handler]:
        return self.route("POST", path, operation)

    def delete(self, path: str, operation: Operation) -> Callable[[Handler], Handler]:
        return self.route("DELETE", path, operation)


API_ROUTES_KEY: web.AppKey[tuple[RouteTable, ...]] = web.AppKey("api_routes")


HOT_PATHS = frozenset(
    {
        "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/batches",
        "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/records",
        "/v3/clusters/{cluster_id}/topics/{topic_name}/records",
        "/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch",
    }
)
"""Produce and fetch, registered first. aiohttp tries every resource under ``/v3/clusters``
in registration order, one regex each; these came 13th to 16th of about a hundred, ~10 µs
of routing per request (py-spy of a lone acks=1 produce at 3 000 requests/s). None of them
matches another route's paths, so going first changes no match (``test_route_order``)."""


def register(app: web.Application, tables: tuple[RouteTable, ...]) -> None:
    """Add every route of ``tables``, kept under ``API_ROUTES_KEY`` for the document (in the tables' order).

    ``HOT_PATHS`` are added first. A GET also answers HEAD, as aiohttp's ``add_get`` does.
    """
    app[API_ROUTES_KEY] = tables
    routes = [route for table in tables for route in table.routes]
    for route in sorted(routes, key=lambda route: route.documented_path not in HOT_PATHS):
        if route.method == "GET":
            app.router.add_get(route.path, route.handler)
        else:
            app.router.add_route(route.method, route.path, route.handler)


def path_param(name: str, schema: Schema, description: str) -> Param:
    return Param(name, "path", schema, description)


def query_param(name: str, schema: Schema | Callable[[ApiLimits], Schema], description: str) -> Param:
    return Param(name, "query", schema, description)


CLUSTER = path_param("cluster_id", {"type": "string"}, "the cluster id from GET /v3/clusters")
TOPIC = path_param("topic_name", {"type": "string"}, "topic name")
PARTITION = path_param("partition_id", PARTITION_ID, "partition number")
JSON = "application/json"
OBJECT: Schema = {"type": "object"}


def link(path: str, method: str, **parameters: Any) -> Schema:
    """An OpenAPI link to ``method path``: what an answer tells a client (or a stateful fuzzer) to call next."""
    pointer = path.replace("~", "~0").replace("/", "~1")
    return {"operationRef": f"#/paths/{pointer}/{method}", "parameters": parameters}


class DocumentedAs:
    """``Annotated[T, DocumentedAs(Model)]``: validated as ``T``, documented as ``Model`` (a ``$ref`` to it).

    For a body a handler validates in parts itself, such as the raw entries of ``records:batch``
    that each fail alone: the document still names the model each part is checked against.
    """

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(self.model.__pydantic_core_schema__)
