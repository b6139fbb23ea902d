"""The broker-to-broker routes under ``/internal/``, described apart from the public document.

They stay served (followers fetch, brokers forward controller requests), but they are
not part of the client API: ``/openapi.json`` leaves them out so no client tool or
fuzzer is invited to move leaderships or shut brokers down. This table exists so a
test can still prove that every route the app registers is described somewhere.
"""

from __future__ import annotations

from typing import Any

_OBJECT = {"type": "object"}
_ERROR = {"$ref": "#/components/responses/Error"}


def _internal(summary: str, status: str = "200", content_type: str = "application/json") -> dict[str, Any]:
    return {
        "summary": summary,
        "tags": ["internal"],
        "responses": {
            status: {"description": summary, "content": {content_type: {"schema": _OBJECT}}},
            "default": _ERROR,
        },
    }


INTERNAL_PATHS: dict[str, dict[str, Any]] = {
    "/internal/fetch": {
        "post": _internal(
            "Replica fetch: binary request and response (broker.replication.fetch_wire)",
            content_type="application/vnd.highwater.fetch.v1",
        )
    },
    "/internal/controller/topics": {"post": _internal("Create a topic on the controller")},
    "/internal/controller/topics/{topic}": {"delete": _internal("Delete a topic on the controller")},
    "/internal/controller/controlled-shutdown/{broker_id}": {
        "post": _internal("Move a stopping broker's leaderships away")
    },
    "/internal/controller/elect-preferred": {"post": _internal("Restore in-sync preferred leaders")},
    "/internal/controller/groups/offsets-topic": {"post": _internal("Create __consumer_offsets on the controller")},
    "/internal/partitions/{topic}": {"get": _internal("The partitions of a topic this broker leads")},
    "/internal/groups": {"get": _internal("The consumer groups this broker coordinates")},
}
