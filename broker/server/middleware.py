"""The middlewares every request passes: request metrics (outer), error mapping, metadata catch-up (inner).

Error mapping is the single place where exceptions become responses, so a client only
ever sees ``{"error_code", "error", "message", "retriable", ...details}`` JSON:

* a ``HighwaterError`` answers with its own status and body;
* pydantic's ``ValidationError`` (wrong types, missing fields) answers 422 and names
  every offending field, except a negative partition id: a malformed request, 400 as
  in a path (``partition_ids``);
* aiohttp's HTTP errors (no such route, wrong method, body over ``client_max_size``)
  are rewritten into the same JSON shape, never aiohttp's HTML or plain text; a 405
  keeps the ``Allow`` header RFC 9110 requires, listing the methods the path declares;
* anything else is a bug: it is logged with its traceback and answered 500 with a
  body that carries no traceback.

429 and 503 answers carry ``Retry-After`` so well-behaved clients back off (the
error's ``retry_after_ms`` when it knows, rounded up to whole seconds); a 401
carries the ``WWW-Authenticate`` challenge RFC 9110 requires.

Body reading bounds how long a client may take to send a ``Content-Length`` body
(``request_body_timeout_ms``): a sender that stalls mid-body gets 408 and the
connection is closed, instead of holding a handler for ever; a client that hangs up
mid-body is an incomplete request (400, logged), not a crash. The body is read once
here and aiohttp keeps it, so handlers read it again for free. A body that had
arrived whole before the request was routed (a lone produce's, in one segment) has
nothing to wait for: no timer is armed, a few microseconds saved per request. Chunked
bodies are the streaming produce, which reads as records arrive.

Metadata catch-up lets a request that names a topic or partition this broker's
metadata view has not applied yet wait for the view (``MetadataView.catch_up_with_topic``)
instead of answering UNKNOWN_TOPIC_OR_PARTITION for a topic that exists.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog
from aiohttp import web
from pydantic import ValidationError

from broker.acks import Acks
from broker.error_table import error_body
from broker.errors import (
    AuthenticationFailed,
    HighwaterError,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    RequestBodyTimedOut,
    RequestTooLarge,
    UnprocessableEntity,
    UnsupportedMediaType,
)
from broker.server.metrics import HttpMetrics
from broker.server.params import NODE_KEY, body_refusal
from broker.server.partition_ids import NEGATIVE_PARTITION_ID

log = structlog.get_logger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RETRY_AFTER_SECONDS = "1"
METRICS_KEY = web.AppKey("http_metrics", HttpMetrics)
MAX_REQUEST_BYTES_KEY = web.AppKey("max_request_bytes", int)
RECEIVED_NS_KEY = web.RequestKey("received_ns", int)
"""When the first middleware saw the request (``time.monotonic_ns``): routed, body parsed or
not, before any other middleware. The latency trace splits the way in at it."""


class HttpProtocolError(InvalidRequest):
    """A refusal aiohttp raised that has no Kafka name of its own: an ``INVALID_REQUEST`` with aiohttp's status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status
        self.error_code = status * 100


def error_response(error: HighwaterError) -> web.Response:
    response = web.json_response(error_body(error), status=error.http_status)
    if error.http_status in (429, 503):
        retry_after_ms = error.details.get("retry_after_ms")
        response.headers["Retry-After"] = (
            str(-(-int(retry_after_ms) // 1000)) if retry_after_ms is not None else RETRY_AFTER_SECONDS
        )
    if isinstance(error, AuthenticationFailed):
        response.headers["WWW-Authenticate"] = error.challenge
    if isinstance(error, MethodNotAllowed):
        response.headers["Allow"] = ", ".join(error.details.get("allowed_methods", ()))
    return response


def validation_error(error: ValidationError) -> InvalidRequest | UnprocessableEntity:
    """422 naming every offending field; 400 when one of them is a negative partition id."""
    if any(item["type"] == NEGATIVE_PARTITION_ID for item in error.errors(include_url=False, include_input=False)):
        return body_refusal(error, InvalidRequest)
    return body_refusal(error, UnprocessableEntity)


def http_exception_error(request: web.Request, error: web.HTTPException) -> HighwaterError:
    if error.status == 404:
        return NotFound(f"no resource at {request.method} {request.path}")
    if error.status == 405:
        allowed = sorted(getattr(error, "allowed_methods", ()) or ())
        return MethodNotAllowed(f"method {request.method} is not allowed on {request.path}", allowed_methods=allowed)
    if error.status == 413:
        limit = request.app[MAX_REQUEST_BYTES_KEY]
        return RequestTooLarge(f"request body is larger than the limit of {limit} bytes", max_request_bytes=limit)
    if error.status == 415:
        return UnsupportedMediaType(error.text or "unsupported content type")
    return HttpProtocolError(error.status, error.reason or "bad request")


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except HighwaterError as error:
        log.info("request_failed", method=request.method, path=request.path, error=error.name, message=error.message)
        return error_response(error)
    except ValidationError as error:
        return error_response(validation_error(error))
    except web.HTTPException as error:
        if error.status < 400:
            raise
        return error_response(http_exception_error(request, error))
    except Exception:
        log.exception("request_crashed", method=request.method, path=request.path)
        return error_response(HighwaterError("internal server error; the broker logged the details"))


@web.middleware
async def body_read_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.content_length is not None and not request.content.is_eof():
        timeout_s = request.app[NODE_KEY].settings.request_body_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout_s):
                await request.read()
        except TimeoutError:
            return _closing(
                RequestBodyTimedOut(
                    f"the request body did not arrive within {timeout_s:g} s ({request.content_length} bytes announced)"
                )
            )
        except ConnectionResetError:
            return _closing(InvalidRequest(f"the connection closed before the {request.content_length}-byte body"))
    return await handler(request)


def _closing(error: HighwaterError) -> web.Response:
    """The answer to a request whose body never fully arrived: the connection cannot be reused."""
    log.info("request_body_incomplete", error=error.name, message=error.message)
    response = error_response(error)
    response.force_close()
    return response


@web.middleware
async def metadata_catch_up_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Before a handler looks up ``{topic_name}`` (and ``{partition_id}``), let the view catch up if it lacks them.

    Costs two dict look-ups on the hot path; the store is read only on a miss.
    """
    topic = request.match_info.get("topic_name")
    if topic is not None:
        partition = request.match_info.get("partition_id", "0")
        catalog = request.app[NODE_KEY].catalog
        if not catalog.holds(topic, int(partition) if partition.isdigit() else None):
            await catalog.catch_up_with(topic)
    return await handler(request)


@web.middleware
async def metrics_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Counts and times every request by route template (never the raw path: bounded labels)."""
    started_ns = request[RECEIVED_NS_KEY] = time.monotonic_ns()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        return response
    finally:
        resource = request.match_info.route.resource
        route = resource.canonical if resource is not None else "unmatched"
        request.app[METRICS_KEY].observe(
            request.method,
            route,
            status,
            (time.monotonic_ns() - started_ns) / 1e9,
            acks=request.query.get("acks", Acks.ALL.value),
        )
