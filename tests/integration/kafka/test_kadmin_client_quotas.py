"""Describe- and AlterClientQuotas on the wire (no Python client has them), against a real 3-broker cluster.

Requests are kio's, as Kafka's own AdminClient sends them; the quota set at the Kafka door
is the one the HTTP ``…/quotas`` route lists, and one set over HTTP is described here.
"""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import f64, i8

from broker.kafka.shapes import build
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster
from tests.unit.kafka.requests import request_class

pytestmark = pytest.mark.integration

VERSION = 1


def alter(
    user: str | None, ops: list[tuple[str, float, bool]], *, entity_type: str = "user", validate_only: bool = False
) -> Any:
    entity = build(request_class(49, VERSION, "EntityData"), entity_type=entity_type, entity_name=user)
    op_class = request_class(49, VERSION, "OpData")
    entry = build(
        request_class(49, VERSION, "EntryData"),
        entity=(entity,),
        ops=tuple(build(op_class, key=key, value=f64(float(value)), remove=remove) for key, value, remove in ops),
    )
    return build(request_class(49, VERSION, "AlterClientQuotasRequest"), entries=(entry,), validate_only=validate_only)


def describe(user: str | None = None) -> Any:
    components: tuple[Any, ...] = ()
    if user is not None:
        component = request_class(48, VERSION, "ComponentData")
        components = (build(component, entity_type="user", match_type=i8(0), match=user),)
    return build(request_class(48, VERSION, "DescribeClientQuotasRequest"), components=components, strict=False)


def described(connection: Connection, user: str | None = None) -> dict[str, dict[str, float]]:
    answer = connection.call(describe(user))
    assert answer.error_code == ErrorCode.none
    return {e.entity[0].entity_name: {v.key: float(v.value) for v in e.values} for e in answer.entries}


def test_quotas_set_at_either_door_are_one(kafka_cluster: Cluster) -> None:
    connection = Connection(kafka_cluster.kafka_addresses[1])
    try:
        (result,) = connection.call(alter("qa-alice", [("producer_byte_rate", 1_048_576, False)])).entries
        assert result.error_code == ErrorCode.none
        assert described(connection, "qa-alice") == {"qa-alice": {"producer_byte_rate": 1_048_576.0}}
        listed = {q["principal"]: q for q in kafka_cluster.api("GET", "/quotas")["data"]}
        assert (
            listed["User:qa-alice"]["producer_byte_rate"] == 1_048_576
            and listed["User:qa-alice"]["consumer_byte_rate"] is None
        )

        status, _ = kafka_cluster.v3("POST", "/quotas", {"principal": "User:qa-bob", "consumer_byte_rate": 2048})
        assert status == 200
        assert described(connection)["qa-bob"] == {"consumer_byte_rate": 2048.0}

        refusals = [
            alter("qa-alice", [("request_percentage", 50, False)]),
            alter("qa-alice", [("producer_byte_rate", 0.5, False)]),
            alter(None, [("producer_byte_rate", 1024, False)]),
            alter("client-1", [("producer_byte_rate", 1024, False)], entity_type="client-id"),
        ]
        for request in refusals:
            (refused,) = connection.call(request).entries
            assert refused.error_code == ErrorCode.invalid_request and refused.error_message
        (checked,) = connection.call(alter("qa-alice", [("consumer_byte_rate", 10, False)], validate_only=True)).entries
        assert checked.error_code == ErrorCode.none
        assert described(connection, "qa-alice") == {"qa-alice": {"producer_byte_rate": 1_048_576.0}}, "unchanged"

        (removed,) = connection.call(alter("qa-alice", [("producer_byte_rate", 0, True)])).entries
        assert removed.error_code == ErrorCode.none
        assert "qa-alice" not in described(connection)
        assert "User:qa-alice" not in {q["principal"] for q in kafka_cluster.api("GET", "/quotas")["data"]}
    finally:
        connection.close()
