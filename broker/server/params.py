"""Request parsing shared by the handlers: path and query numbers, acks, bodies, content types.

Every client mistake becomes a ``HighwaterError`` naming the parameter and what was
wrong, so the error middleware answers 4xx and never 500. Numbers in paths and queries
are decimal integers; a sign, spaces or a fraction are refused rather than guessed at.
Every number a handler takes from its path goes through ``path_int`` and from its query
through ``query_int`` (both ``parse_int``), so ``…/controlled-shutdown/true`` is the same
400 ``INVALID_REQUEST`` naming ``broker_id`` as ``…/partitions/x`` naming ``partition_id``;
a handler parses them before it looks anything up.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from aiohttp import web
from pydantic import BaseModel, BeforeValidator, ValidationError

from broker.acks import Acks
from broker.errors import HighwaterError, InvalidRequest, UnknownCluster, UnknownPartition, UnsupportedMediaType
from broker.server.json_depth import MAX_JSON_DEPTH, nests_too_deeply

if TYPE_CHECKING:
    from broker.server.host import HttpHost

NODE_KEY: web.AppKey[HttpHost] = web.AppKey("node")
BATCH_CONTENT_TYPE = "application/vnd.kafka.batch.v2"
BINARY_CONTENT_TYPES = frozenset({BATCH_CONTENT_TYPE, "application/octet-stream"})
INT32_MAX = 2**31 - 1
"""Kafka's partition ids and broker ids are int32."""
INT64_MAX = 2**63 - 1
"""Kafka's offsets and timestamps are int64; a larger number can name nothing."""

Model = TypeVar("Model", bound=BaseModel)
Refusal = TypeVar("Refusal", bound=HighwaterError)


def _json_integer(value: Any) -> int:
    """JSON Schema's ``integer``: an int, or a number without a fraction (``5.0``); never a bool or a string."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("must be an integer")
    if isinstance(value, float) and not value.is_integer():
        raise ValueError("must be an integer")
    return int(value)


JsonInt = Annotated[int, BeforeValidator(_json_integer)]
"""An integer field of a strictly validated body, with the meaning its schema's ``integer`` has."""


def node_of(request: web.Request) -> HttpHost:
    """The broker behind the app, after checking the ``{cluster_id}`` in the path names it."""
    node = request.app[NODE_KEY]
    cluster_id = request.match_info.get("cluster_id")
    if cluster_id is not None and cluster_id != node.cluster_id:
        raise UnknownCluster(f"cluster {cluster_id!r} not found; this is cluster {node.cluster_id!r}")
    return node


def check_partition(node: HttpHost, topic: str, partition: int) -> None:
    """``UnknownTopic`` / ``UnknownPartition`` from metadata alone, before any work is done."""
    count = node.catalog.partition_count(topic)
    if partition >= count:
        raise UnknownPartition(
            f"topic {topic!r} has partitions 0..{count - 1}, not {partition}", topic_name=topic, partition_id=partition
        )


def parse_int(name: str, text: str, *, minimum: int = 0, maximum: int = INT64_MAX) -> int:
    """A decimal integer in ``[minimum, maximum]``; ``InvalidRequest`` names ``name`` otherwise."""
    if not text.isascii() or not text.isdigit():
        raise InvalidRequest(f"{name} must be a non-negative integer, got {text!r}", parameter=name)
    value = int(text)
    if value < minimum:
        raise InvalidRequest(f"{name} must be at least {minimum}, got {value}", parameter=name)
    if value > maximum:
        raise InvalidRequest(f"{name} must be at most {maximum}, got {value}", parameter=name)
    return value


def query_int(
    query: Mapping[str, str], name: str, default: int | None, *, minimum: int = 0, maximum: int = INT64_MAX
) -> int | None:
    text = query.get(name)
    if text is None or text == "":
        return default
    return parse_int(name, text, minimum=minimum, maximum=maximum)


def path_int(request: web.Request, name: str, *, minimum: int = 0, maximum: int = INT32_MAX) -> int:
    """The integer path parameter ``{name}`` (an int32 id); ``InvalidRequest`` naming it when it is not one."""
    return parse_int(name, request.match_info[name], minimum=minimum, maximum=maximum)


def partition_param(request: web.Request) -> int:
    """``{partition_id}``: a negative one is refused as in a body (``partition_ids``)."""
    return path_int(request, "partition_id")


def acks_param(query: Mapping[str, str]) -> Acks:
    """``acks=0|1|all`` in any case (``-1`` is Kafka's spelling of ``all``); default ``all``."""
    text = query.get("acks", Acks.ALL.value)
    try:
        return Acks.parse(text)
    except ValueError:
        raise InvalidRequest(f"acks must be 0, 1 or all, got {text.lower()!r}", parameter="acks") from None


def timeout_param(query: Mapping[str, str], default_ms: int, maximum_ms: int) -> int:
    value = query_int(query, "timeout_ms", default_ms, maximum=maximum_ms)
    assert value is not None
    return value


def media_type(request: web.Request) -> str:
    """The content type without parameters, lower case; empty when the client sent none."""
    if "Content-Type" not in request.headers:
        return ""
    return request.content_type.lower()


def is_json_media_type(media: str) -> bool:
    return media in ("", "application/json", "application/x-ndjson") or media.endswith("+json")


def require_json(request: web.Request) -> None:
    media = media_type(request)
    if not is_json_media_type(media):
        raise UnsupportedMediaType(f"content type {media!r} is not supported here; send Content-Type: application/json")


def require_binary(request: web.Request) -> None:
    media = media_type(request)
    if media not in BINARY_CONTENT_TYPES:
        raise UnsupportedMediaType(
            f"content type {media!r} is not supported here; send Content-Type: {BATCH_CONTENT_TYPE}"
        )


def parse_json(body: bytes) -> Any:
    """The one place a JSON request body is parsed: its nesting is bounded before the parser recurses."""
    if nests_too_deeply(body):
        raise InvalidRequest(
            f"JSON nests deeper than the limit of {MAX_JSON_DEPTH} levels of arrays and objects",
            max_json_depth=MAX_JSON_DEPTH,
        )
    try:
        return json.loads(body)
    except UnicodeDecodeError as error:
        raise InvalidRequest(f"malformed JSON: the body is not UTF-8 ({error.reason})") from error
    except json.JSONDecodeError as error:
        raise InvalidRequest(f"malformed JSON: {error.msg} at line {error.lineno} column {error.colno}") from error


def body_refusal(error: ValidationError, refusal: type[Refusal]) -> Refusal:
    """``refusal`` naming every field of a body that failed validation, with pydantic's message for each."""
    items = error.errors(include_url=False, include_input=False)
    problems = [
        {"field": ".".join(str(part) for part in item["loc"]) or "body", "message": item["msg"]} for item in items
    ]
    summary = "; ".join(f"{problem['field']}: {problem['message']}" for problem in problems)
    return refusal(f"invalid request body: {summary}", errors=problems)


async def read_model(request: web.Request, model: type[Model], *, refusal: type[HighwaterError] | None = None) -> Model:
    """Read a JSON body and validate it. A body not of the model's shape is refused with ``refusal`` when the
    route's spec names its error (the ACL routes answer 400); otherwise pydantic's ``ValidationError`` becomes
    422 in the middleware."""
    require_json(request)
    document = parse_json(await request.read())
    try:
        return model.model_validate(document)
    except ValidationError as error:
        if refusal is None:
            raise
        raise body_refusal(error, refusal) from None


def wants_batches(request: web.Request) -> bool:
    """True when the reader asked for raw record batches instead of JSON."""
    return BATCH_CONTENT_TYPE in request.headers.get("Accept", "").lower()
