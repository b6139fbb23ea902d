"""The aiohttp application of one broker: routes, middlewares, shared per-app state.

``create_app(node)`` builds the app around a started broker (``BrokerNode``, seen as ``HttpHost``); the caller owns
the node's lifetime (start it before, stop it after the runner). The body limit is the
node's ``max_request_bytes``, enforced by aiohttp while reading, answered 413 JSON.

Middleware order matters: metrics is outermost so it records the status the client
really got, including the JSON error responses the error middleware builds; the
body read and the metadata catch-up are inside the error mapping, so a body over the
limit or a store failure while it waits answers as JSON like any other. The security
door is inside the error mapping and before the body read: a request that may not
use a route is refused before the broker reads its body or waits for metadata.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from broker.server import (
    routes_acls_batch,
    routes_broker_configs,
    routes_broker_moves,
    routes_cluster,
    routes_configs,
    routes_console,
    routes_console_data,
    routes_console_offsets,
    routes_consumers_v2,
    routes_delete_records,
    routes_group_assignments,
    routes_groups,
    routes_internal,
    routes_log_dirs,
    routes_ops,
    routes_produce,
    routes_producer_ids,
    routes_reassignments,
    routes_records,
    routes_replicas,
    routes_security,
    routes_topic_partitions,
    routes_topics,
    routes_transactional_producers,
    routes_transactions,
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
from broker.server.route_access import ROUTE_ACCESS
from broker.server.routes_produce import PRODUCER_KEY
from broker.server.security_middleware import ROUTE_ACCESS_KEY, security_middleware

if TYPE_CHECKING:
    from broker.server.host import HttpHost

ROUTE_TABLES: tuple[RouteTable, ...] = (
    routes_cluster.routes,
    routes_topics.routes,
    routes_produce.routes,
    routes_records.routes,
    routes_ops.routes,
    routes_internal.routes,
    routes_transactions.routes,
    routes_transactional_producers.routes,
    routes_producer_ids.routes,
    routes_groups.routes,
    routes_security.routes,
    routes_console.routes,
    routes_console_data.routes,
    routes_configs.routes,
    routes_topic_partitions.routes,
    routes_delete_records.routes,
    routes_replicas.routes,
    routes_reassignments.routes,
    routes_broker_moves.routes,
    routes_log_dirs.routes,
    routes_group_assignments.routes,
    routes_broker_configs.routes,
    routes_acls_batch.routes,
    routes_consumers_v2.routes,
    routes_console_offsets.routes,
)
"""Every route of the app, in registration order, each with its description (``api_routes``)."""


async def _drain_unacknowledged(app: web.Application) -> None:
    """On shutdown, finish the acks=0 appends already accepted."""
    await app[PRODUCER_KEY].drain()


async def _end_long_polls(app: web.Application) -> None:
    """On shutdown, answer every parked read and follower fetch at once, and close the replication streams.

    The server waits for the requests in flight before the broker stops; a long poll
    would otherwise hold the stop for its whole wait (up to ``fetch_max_wait_ms``).
    """
    replicas = app[NODE_KEY].replicas
    replicas.end_long_polls()
    await replicas.end_streams()


def access_mismatch(tables: tuple[RouteTable, ...]) -> list[str]:
    """Routes ``route_access`` says nothing about, and entries of it no route has."""
    declared = {(route.method, route.documented_path) for table in tables for route in table.routes}
    return sorted(f"{method} {path}" for method, path in declared ^ ROUTE_ACCESS.keys())


def create_app(node: HttpHost) -> web.Application:
    """Refuses to build an app whose routes and access table differ: a route without a rule is open to anyone."""
    mismatch = access_mismatch(ROUTE_TABLES)
    if mismatch:
        raise RuntimeError(f"routes and broker.server.route_access differ on: {', '.join(mismatch)}")
    max_request_bytes = node.settings.max_request_bytes
    app = web.Application(
        client_max_size=max_request_bytes,
        middlewares=[
            metrics_middleware,
            error_middleware,
            security_middleware,
            body_read_middleware,
            metadata_catch_up_middleware,
        ],
    )
    app[NODE_KEY] = node
    app[ROUTE_ACCESS_KEY] = ROUTE_ACCESS
    app[MAX_REQUEST_BYTES_KEY] = max_request_bytes
    app[METRICS_KEY] = HttpMetrics(node)
    app[PRODUCER_KEY] = RecordProducer(node)
    app.on_shutdown.append(_drain_unacknowledged)
    app.on_shutdown.append(_end_long_polls)
    register(app, ROUTE_TABLES)
    return app
