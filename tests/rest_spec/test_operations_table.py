"""The operations table agrees with the broker's routes: a served row has a route, a route of the spec has a row.

No cluster: the routes are read from the app's route tables, the source of its
OpenAPI document and of its access policy. When an operation is added to the broker,
this fails until its row says ``implemented`` (or ``different``, with the reason), and
``docs/rest-compat.md`` is rendered again.
"""

from __future__ import annotations

from broker.server.app import ROUTE_TABLES
from tests.rest_spec.operations import BY_KEY, OPERATIONS, SPEC_PREFIX

V3 = SPEC_PREFIX + "/"


def _v3_routes() -> set[str]:
    """``METHOD path`` of every public route, with the spec's prefix removed."""
    return {
        f"{route.method} {route.documented_path.removeprefix(SPEC_PREFIX)}"
        for table in ROUTE_TABLES
        for route in table.routes
        if route.documented_path.startswith(V3)
    }


def test_the_table_has_the_spec_s_fifty_operations_once_each() -> None:
    assert len(OPERATIONS) == 50
    assert len(BY_KEY) == 50
    assert len({op.name for op in OPERATIONS}) == 50


def test_every_served_row_is_a_route_and_every_route_of_the_spec_is_served() -> None:
    routes = _v3_routes()
    served = {op.key for op in OPERATIONS if op.served}
    assert served - routes == set(), "rows marked served that the broker has no route for"
    assert {op.key for op in OPERATIONS if not op.served} & routes == set(), "routes whose row says not_served"


def test_every_verdict_but_implemented_gives_its_reason() -> None:
    for op in OPERATIONS:
        assert (op.verdict == "implemented") == (op.reason == ""), op.key


def test_every_operation_lists_a_success_and_the_error_body() -> None:
    for op in OPERATIONS:
        assert any(200 <= status < 300 for status in op.answers), op.key
        assert {400, 404} <= set(op.answers), op.key
