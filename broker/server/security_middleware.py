"""The door every request passes before its handler: who is asking, and may they use this route.

Authentication comes first and applies to every matched route: a request that
offers credentials must offer good ones, even on a route anyone may call. A route
whose access (``route_access``) is ``anyone`` lets a request without credentials in
as ``User:ANONYMOUS``; any other route answers 401 with ``WWW-Authenticate``.
``brokers`` routes (``/internal/``) take only a broker token, in every mode. Then the
entry's ACL checks run, each a 403 (or, for a hidden topic, the missing-topic answer).

A broker that forwards a client's request (a group request to its coordinator) says
whose it is in ``X-Highwater-Principal`` and ``X-Highwater-Client-Host``; only a
request that proved it comes from a broker may say so, so the coordinator checks the
client, not the broker that carried the request.

Unmatched paths and methods pass untouched to the error mapping (404, 405): the route
list is public in ``/openapi.json`` anyway.
"""

from __future__ import annotations

from aiohttp import web

from broker.errors import AuthenticationFailed, ClusterAuthorizationFailed, HighwaterError, InvalidRequest
from broker.security.acl import Resource
from broker.security.principal import ANONYMOUS, Principal
from broker.server.api_routes import Handler
from broker.server.authorization import CLIENT_HOST_KEY, PRINCIPAL_KEY, audit, require
from broker.server.params import NODE_KEY
from broker.server.route_access import Access, Check

ROUTE_ACCESS_KEY = web.AppKey("route_access", dict)
FORWARDED_PRINCIPAL_HEADER = "X-Highwater-Principal"
FORWARDED_HOST_HEADER = "X-Highwater-Client-Host"


def route_access(request: web.Request) -> Access | None:
    resource = request.match_info.route.resource
    if resource is None:
        return None
    method = "GET" if request.method == "HEAD" else request.method
    return request.app[ROUTE_ACCESS_KEY].get((method, resource.canonical))


def _authenticated(request: web.Request, access: Access) -> tuple[Principal, str]:
    node = request.app[NODE_KEY]
    source = request.remote or "unknown"
    try:
        principal = node.security.authenticate(request.headers.get("Authorization"), request.transport, source)
    except HighwaterError as error:
        audit.warning(
            "audit.authentication_failed",
            source=source,
            method=request.method,
            path=request.path,
            error=error.name,
            reason=error.message,
        )
        raise
    if principal is None:
        if access.who != "anyone":
            raise AuthenticationFailed(f"{request.method} {request.path} needs credentials")
        return ANONYMOUS, source
    forwarded = request.headers.get(FORWARDED_PRINCIPAL_HEADER)
    if principal.is_broker and forwarded:
        try:
            return Principal.parse(forwarded), request.headers.get(FORWARDED_HOST_HEADER, source)
        except ValueError as error:
            raise InvalidRequest(f"{FORWARDED_PRINCIPAL_HEADER}: {error}") from None
    return principal, source


def _resource(request: web.Request, check: Check) -> Resource:
    name = request.match_info[check.name_param] if check.name_param else Resource.cluster().name
    return Resource(check.resource_type, name)


@web.middleware
async def security_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    access = route_access(request)
    if access is None:
        return await handler(request)
    principal, host = _authenticated(request, access)
    request[PRINCIPAL_KEY] = principal
    request[CLIENT_HOST_KEY] = host
    if access.who == "brokers" and not principal.is_broker:
        audit.warning("audit.denied", principal=str(principal), source=host, method=request.method, path=request.path)
        raise ClusterAuthorizationFailed(f"{request.path} is for brokers of this cluster only")
    for check in access.checks:
        require(request, check.operation, _resource(request, check), hidden_as_missing=check.hidden_as_missing)
    return await handler(request)
