"""The aiohttp application of one broker: routes, middlewares, shared per-app state.

``create_app(node)`` builds the app around a started ``BrokerNode``; the caller owns
the node's lifetime (start it before, stop it after the runner). The body limit is the
node's ``max_request_bytes``, enforced by aiohttp while reading, answered 413 JSON.

Middleware order matters: metrics is outermost so it records the status the client
really got, including the JSON error responses the error middleware builds; the
body read and the metadata catch-up are inside the error mapping, so a body over the
limit or a store failure while it waits answers as JSON like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from broker.server import (
    routes_cluster,
    routes_groups,
    routes_internal,
    routes_ops,
    routes_produce,
    routes_producer_ids,
    routes_records,
    routes_topics,
)
from broker.server.api_routes import RouteTable, register
from broker.server.metrics import HttpMetrics
from broker.server.middleware import (
    MAX_REQUEST_BYTES_KEY,
    METRICS_KEY,
    body_read_middleware,
    error_middleware,
    metadata_catch_up_middleware,
    metrics_middleware,
)
from broker.server.params import NODE_KEY
from broker.server.producing import RecordProducer
from broker.server.routes_produce import PRODUCER_KEY

if TYPE_CHECKING:
    from broker.node.broker_node import BrokerNode

ROUTE_TABLES: tuple[RouteTable, ...] = (
    routes_cluster.routes,
    routes_topics.routes,
    routes_produce.routes,
    routes_records.routes,
    routes_ops.routes,
    routes_internal.routes,
    routes_producer_ids.routes,
    routes_groups.routes,
)
"""Every route of the app, in registration order, each with its description (``api_routes``)."""


async def _drain_unacknowledged(app: web.Application) -> None:
    """On shutdown, finish the acks=0 appends already accepted."""
    await app[PRODUCER_KEY].drain()


def create_app(node: BrokerNode) -> web.Application:
    max_request_bytes = node.settings.max_request_bytes
    app = web.Application(
        client_max_size=max_request_bytes,
        middlewares=[metrics_middleware, error_middleware, body_read_middleware, metadata_catch_up_middleware],
    )
    app[NODE_KEY] = node
    app[MAX_REQUEST_BYTES_KEY] = max_request_bytes
    app[METRICS_KEY] = HttpMetrics(node)
    app[PRODUCER_KEY] = RecordProducer(node)
    app.on_shutdown.append(_drain_unacknowledged)
    register(app, ROUTE_TABLES)
    return app
