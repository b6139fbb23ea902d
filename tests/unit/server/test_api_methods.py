"""A method a path does not declare: 405, an ``Allow`` header naming the declared ones (RFC 9110), a JSON body.

Every route of the app is probed with every method it does not declare, taken from the
app's own router, so a route added later is covered without touching this test.
"""

from __future__ import annotations

import re

from aiohttp import web

from tests.unit.server.conftest import Api, error_of

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def concrete_path(canonical: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda match: "0" if match.group(1).endswith("_id") else "x", canonical)


def declared_methods(app: web.Application, path: str) -> set[str]:
    """Methods of every route whose path pattern matches ``path``: what a request there can be served with."""
    methods: set[str] = set()
    for resource in app.router.resources():
        info = resource.get_info()
        pattern = info.get("pattern")
        if pattern.fullmatch(path) if pattern is not None else info.get("path") == path:
            methods.update(route.method for route in resource)
    return methods


async def test_every_route_answers_an_undeclared_method_with_405_and_allow(api: Api) -> None:
    app = api.client.app
    probed = 0
    for resource in app.router.resources():
        path = concrete_path(resource.canonical)
        declared = declared_methods(app, path)
        assert declared, path
        for method in sorted(set(METHODS) - declared):
            response = await api.client.request(method, path)
            assert response.status == 405, (method, path, await response.text())
            allow = {item.strip() for item in response.headers.get("Allow", "").split(",")}
            assert allow == declared, (method, path, response.headers.get("Allow"))
            if method != "HEAD":
                body = await error_of(response, 405)
                assert body["error"] == "METHOD_NOT_ALLOWED" and body["error_code"] == 40500
                assert method in body["message"] and path in body["message"]
            probed += 1
    assert probed > 150


async def test_trace_healthz_is_405_allowing_get_and_head(api: Api) -> None:
    response = await api.client.request("TRACE", "/healthz")
    body = await error_of(response, 405)
    assert response.headers["Allow"] == "GET, HEAD"
    assert body["allowed_methods"] == ["GET", "HEAD"] and body["message"] == "method TRACE is not allowed on /healthz"


async def test_an_action_path_allows_only_its_own_method(api: Api) -> None:
    """``…/consumers/{id}:heartbeat`` is not also ``…/consumers/{id}`` with an id ending in ``:heartbeat``."""
    group = f"{api.cluster}/consumer-groups/g/consumers/m1"
    for method in ("OPTIONS", "GET", "DELETE"):
        response = await api.client.request(method, f"{group}:heartbeat")
        await error_of(response, 405)
        assert response.headers["Allow"] == "POST", method
