"""The OpenAPI 3.1 document of the HTTP API, served at ``/openapi.json``, made from the route tables.

Every route is declared with its ``Operation`` (``api_routes``), and every body is named
by its pydantic model: request bodies by the models that validate them, answers by
``responses``. Their JSON schemas are generated together, ``$defs`` becoming
``components/schemas``, so a schema the document shows is the one a request is checked
against. Routes under ``/internal/`` are left out (``api_routes.ApiRoute.public``).

Every limit a handler enforces is stated (``ApiLimits`` carries the ones that are broker
settings), so a request the document calls valid is never refused for a limit it did not
state; refusals that depend on the cluster's state (replication factor above the live
brokers, an unknown topic) are documented as error answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from broker.server.api_routes import JSON, ApiLimits, ApiRoute, Content, RouteTable, Schema
from broker.server.json_depth import MAX_JSON_DEPTH
from broker.server.responses import Error
from broker.server.route_access import ROUTE_ACCESS
from config.security import AuthenticationMode

if TYPE_CHECKING:
    from pydantic_core import CoreSchema


SCHEMAS = "#/components/schemas/"
ERROR = {"$ref": "#/components/responses/Error"}
_VALIDATION: Literal["validation"] = "validation"
"""Every schema describes what is accepted: request models validate, response models are only documented."""


class _UntitledFields(GenerateJsonSchema):
    """Models keep their titles; fields do not, their names already say it."""

    def field_title_should_be_set(self, schema: CoreSchema) -> bool:
        return False


def public_routes(tables: tuple[RouteTable, ...]) -> list[ApiRoute]:
    return [route for table in tables for route in table.routes if route.public]


def _contents(route: ApiRoute) -> list[Content]:
    operation = route.operation
    bodies = [reply.content for reply in operation.replies]
    return bodies + ([operation.body.content] if operation.body else [])


class _Schemas:
    """The JSON schemas of every model the routes name, generated at once so they share ``components``."""

    def __init__(self, routes: list[ApiRoute], limits: ApiLimits) -> None:
        models: set[type[BaseModel]] = {Error}
        for route in routes:
            for content in _contents(route):
                models.update(item for item in content.values() if isinstance(item, type))
        keys = [(model, _VALIDATION) for model in sorted(models, key=lambda model: model.__name__)]
        refs, definitions = models_json_schema(keys, ref_template=SCHEMAS + "{model}", schema_generator=_UntitledFields)
        self._refs = {model: refs[(model, _VALIDATION)] for model, _ in keys}
        self.components: dict[str, Any] = definitions["$defs"]
        self.components["BatchRequest"]["properties"]["entries"]["maxItems"] = limits.max_batch_entries

    def content(self, content: Content) -> dict[str, Any]:
        return {
            media: {"schema": self._refs[item] if isinstance(item, type) else item} for media, item in content.items()
        }


def _operation(route: ApiRoute, schemas: _Schemas, limits: ApiLimits) -> dict[str, Any]:
    operation = route.operation
    responses: dict[str, Any] = {}
    for reply in operation.replies:
        answer: dict[str, Any] = {"description": reply.description}
        if reply.content:
            answer["content"] = schemas.content(reply.content)
        if reply.links:
            answer["links"] = dict(reply.links)
        responses[str(reply.status)] = answer
    responses["default"] = ERROR
    summary = operation.summary(limits) if callable(operation.summary) else operation.summary
    document: dict[str, Any] = {
        "summary": summary,
        "parameters": [param.document(limits) for param in operation.params],
        "responses": responses,
    }
    if operation.body is not None:
        document["requestBody"] = {
            "required": operation.body.required,
            "content": schemas.content(operation.body.content),
        }
    if operation.description is not None:
        document["description"] = operation.description
    if operation.tags:
        document["tags"] = list(operation.tags)
    return document


def public_paths(tables: tuple[RouteTable, ...], limits: ApiLimits) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document's ``paths`` and ``components/schemas``, for the public routes of ``tables``."""
    routes = public_routes(tables)
    schemas = _Schemas(routes, limits)
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.documented_path, {})[route.method.lower()] = _operation(route, schemas, limits)
    return paths, schemas.components


SECURITY_SCHEMES: dict[str, dict[str, Any]] = {
    "basic": {"type": "http", "scheme": "basic", "description": "a SCRAM-SHA-512 user of the cluster"},
    "mtls": {"type": "mutualTLS", "description": "the client certificate's common name is the user"},
}


def _require_authentication(document: dict[str, Any], mode: AuthenticationMode) -> None:
    """State the scheme the broker takes; the routes anyone may call (``route_access``) need none."""
    document["components"]["securitySchemes"] = {mode: SECURITY_SCHEMES[mode]}
    document["security"] = [{mode: []}]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if ROUTE_ACCESS[(method.upper(), path)].who == "anyone":
                operation["security"] = []


def openapi_document(
    tables: tuple[RouteTable, ...],
    server_url: str,
    limits: ApiLimits,
    cluster_id: str | None = None,
    authentication: AuthenticationMode = "none",
) -> dict[str, Any]:
    """The public document; ``cluster_id`` becomes the example of every ``{cluster_id}`` parameter."""
    paths, components = public_paths(tables, limits)
    if cluster_id is not None:
        for item in paths.values():
            for operation in item.values():
                for parameter in operation["parameters"]:
                    if parameter["name"] == "cluster_id":
                        parameter["example"] = cluster_id
    error: Schema = {"description": "any error", "content": {JSON: {"schema": {"$ref": SCHEMAS + "Error"}}}}
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "highwater",
            "version": "3",
            "description": "Kafka-style broker over HTTP (Confluent REST Proxy v3 conventions). "
            "Readers never see an offset at or above the high watermark. "
            f"JSON bodies nest at most {MAX_JSON_DEPTH} levels of arrays and objects; deeper ones are "
            "refused with 400 INVALID_REQUEST before they are parsed.",
        },
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {"schemas": components, "responses": {"Error": error}},
    }
    if authentication != "none":
        _require_authentication(document, authentication)
    return document
