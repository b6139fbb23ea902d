"""Produce and fetch are routed first, and routing any route's path still finds that route.

aiohttp matches resources in registration order, so putting ``HOT_PATHS`` first could
let one of them take a request meant for a route registered before it; every route's
path, with sample values (and a literal ``-`` where the path has one), must resolve to itself.
"""

from __future__ import annotations

import re

from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from broker.server.api_routes import HOT_PATHS, register
from broker.server.app import ROUTE_TABLES

SAMPLES = {"partition_id": "0", "broker_id": "1"}


def _app() -> web.Application:
    app = web.Application()
    register(app, ROUTE_TABLES)
    return app


def _sample_url(documented_path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda match: SAMPLES.get(match.group(1), f"sample-{match.group(1)}"), documented_path)


def test_the_hot_paths_exist_and_are_registered_first() -> None:
    documented = {route.documented_path for table in ROUTE_TABLES for route in table.routes}
    assert documented >= HOT_PATHS
    first = [resource.canonical for resource in _app().router.resources()][: len(HOT_PATHS)]
    assert set(first) == HOT_PATHS


async def test_every_route_path_resolves_to_its_own_route() -> None:
    app = _app()
    for table in ROUTE_TABLES:
        for route in table.routes:
            request = make_mocked_request(route.method, _sample_url(route.documented_path), app=app)
            match = await app.router.resolve(request)
            resource = match.route.resource
            assert resource is not None, f"{route.method} {route.documented_path} matched nothing"
            assert resource.canonical == route.documented_path, (
                f"{route.method} {route.documented_path} was routed to {resource.canonical}"
            )
