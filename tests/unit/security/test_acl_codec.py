"""ACL bindings and filters on the REST v3 wire: validation messages, defaults, the store key."""

from __future__ import annotations

import pytest

from broker.errors import InvalidAcl
from broker.security.acl import AclBinding, AclFilter, AclOperation, AclPermission, PatternType, ResourceType
from broker.security.acl_codec import (
    binding_from_wire,
    binding_key,
    binding_to_wire,
    filter_from_wire,
    filter_to_wire,
)

WIRE = {
    "resource_type": "TOPIC",
    "resource_name": "orders",
    "pattern_type": "PREFIXED",
    "principal": "User:alice",
    "host": "10.0.0.1",
    "operation": "WRITE",
    "permission": "ALLOW",
}
BINDING = AclBinding(
    ResourceType.TOPIC,
    "orders",
    PatternType.PREFIXED,
    "User:alice",
    "10.0.0.1",
    AclOperation.WRITE,
    AclPermission.ALLOW,
)


def test_binding_round_trips_through_the_wire_form() -> None:
    assert binding_from_wire(WIRE) == BINDING
    assert binding_to_wire(BINDING) == WIRE


def test_host_defaults_to_any_host_and_enums_are_case_insensitive() -> None:
    wire = {**WIRE, "operation": "write", "permission": "deny"}
    del wire["host"]
    binding = binding_from_wire(wire)
    assert binding.host == "*"
    assert (binding.operation, binding.permission) == (AclOperation.WRITE, AclPermission.DENY)


def test_a_listed_kafka_acl_object_can_be_posted_back() -> None:
    assert binding_from_wire({**WIRE, "kind": "KafkaAcl", "cluster_id": "c1"}) == BINDING


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"resource_type": "QUEUE"},
            "resource_type must be one of TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID (got 'QUEUE')",
        ),
        ({"pattern_type": "MATCH"}, "pattern_type must be one of LITERAL, PREFIXED (got 'MATCH')"),
        ({"operation": "WRTIE"}, "operation must be one of ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE"),
        ({"permission": None}, "permission must be one of ALLOW, DENY (got None)"),
        ({"resource_name": ""}, "resource_name must be a non-empty string"),
        ({"host": 7}, "host must be a non-empty string (got 7)"),
        ({"principal": "alice"}, "principal must be User:<name> or User:* (got 'alice')"),
        ({"principal": "Broker:1"}, "principal must be User:<name> or User:*"),
        ({"principal": "User:"}, "principal must be User:<name>"),
        ({"resource_type": "CLUSTER", "resource_name": "x"}, "resource_name of a CLUSTER ACL must be kafka-cluster"),
        ({"operaton": "READ"}, "unknown field(s) operaton; allowed: resource_type, resource_name"),
    ],
)
def test_each_bad_field_is_named_with_the_allowed_values(change: dict, message: str) -> None:
    with pytest.raises(InvalidAcl) as raised:
        binding_from_wire({**WIRE, **change})
    assert message in raised.value.message
    assert (raised.value.http_status, raised.value.error_code, raised.value.name) == (400, 40002, "INVALID_REQUEST")


def test_a_missing_field_is_named() -> None:
    wire = dict(WIRE)
    del wire["operation"]
    with pytest.raises(InvalidAcl, match="operation must be one of"):
        binding_from_wire(wire)


def test_everyone_is_a_valid_principal() -> None:
    assert binding_from_wire({**WIRE, "principal": "User:*"}).principal == "User:*"


def test_an_empty_filter_matches_everything_and_any_means_absent() -> None:
    assert filter_from_wire({}) == AclFilter()
    assert filter_from_wire({"resource_type": "ANY", "operation": "any", "permission": "ANY"}) == AclFilter()


def test_filter_reads_every_field() -> None:
    assert filter_from_wire(WIRE) == AclFilter(
        ResourceType.TOPIC,
        "orders",
        PatternType.PREFIXED,
        "User:alice",
        "10.0.0.1",
        AclOperation.WRITE,
        AclPermission.ALLOW,
    )


def test_match_filter_needs_a_resource_name() -> None:
    assert filter_from_wire({"pattern_type": "MATCH", "resource_name": "orders"}).pattern_type == "MATCH"
    with pytest.raises(InvalidAcl, match="MATCH needs a resource_name"):
        filter_from_wire({"pattern_type": "match"})


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"pattern_type": "EXACT"}, "pattern_type must be one of ANY, MATCH, LITERAL, PREFIXED (got 'EXACT')"),
        ({"operation": "WRTIE"}, "operation must be one of ANY, ALL, READ"),
        ({"principal": "bob"}, "principal must be User:<name>"),
        ({"principle": "User:bob"}, "unknown filter parameter(s) principle"),
    ],
)
def test_bad_filter_parameters_are_refused(params: dict, message: str) -> None:
    with pytest.raises(InvalidAcl) as raised:
        filter_from_wire(params)
    assert message in raised.value.message


def test_filter_to_wire_leaves_out_what_matches_anything() -> None:
    acl_filter = AclFilter(resource_type=ResourceType.GROUP, pattern_type="MATCH", resource_name="g")
    assert filter_to_wire(acl_filter) == {"resource_type": "GROUP", "resource_name": "g", "pattern_type": "MATCH"}
    assert filter_from_wire(filter_to_wire(acl_filter)) == acl_filter


def test_binding_key_is_stable_store_safe_and_unique_per_binding() -> None:
    key = binding_key(BINDING)
    assert key == binding_key(binding_from_wire(dict(reversed(list(WIRE.items())))))
    assert len(key) == 64
    assert set(key) <= set("0123456789abcdef")
    slashy = binding_from_wire({**WIRE, "resource_name": "a/b%c/é"})
    assert set(binding_key(slashy)) <= set("0123456789abcdef")
    others = {binding_key(binding_from_wire({**WIRE, field: value})) for field, value in _one_change_each()}
    assert key not in others
    assert len(others) == 7


def _one_change_each() -> list[tuple[str, str]]:
    return [
        ("resource_type", "GROUP"),
        ("resource_name", "orders2"),
        ("pattern_type", "LITERAL"),
        ("principal", "User:bob"),
        ("host", "*"),
        ("operation", "READ"),
        ("permission", "DENY"),
    ]
