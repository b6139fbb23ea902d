"""AclFilter selection (Kafka's AclBindingFilter): None matches anything, MATCH selects what applies to a name."""

from __future__ import annotations

import pytest

from broker.security.acl import (
    MATCH,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
    filter_matches,
)

LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


def binding(
    name: str = "orders",
    pattern: PatternType = LITERAL,
    resource_type: ResourceType = ResourceType.TOPIC,
    principal: str = "User:alice",
    host: str = "*",
    operation: AclOperation = AclOperation.READ,
    permission: AclPermission = AclPermission.ALLOW,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def test_the_empty_filter_matches_every_binding() -> None:
    for candidate in (binding(), binding("*"), binding("ord", PREFIXED), binding(resource_type=ResourceType.GROUP)):
        assert filter_matches(AclFilter(), candidate)


@pytest.mark.parametrize(
    ("acl_filter", "expected"),
    [
        (AclFilter(resource_type=ResourceType.TOPIC), True),
        (AclFilter(resource_type=ResourceType.GROUP), False),
        (AclFilter(resource_name="orders"), True),
        (AclFilter(resource_name="order"), False),
        (AclFilter(pattern_type=LITERAL), True),
        (AclFilter(pattern_type=PREFIXED), False),
        (AclFilter(principal="User:alice"), True),
        (AclFilter(principal="User:bob"), False),
        (AclFilter(principal="User:*"), False),
        (AclFilter(host="*"), True),
        (AclFilter(host="10.0.0.1"), False),
        (AclFilter(operation=AclOperation.READ), True),
        (AclFilter(operation=AclOperation.ALL), False),
        (AclFilter(permission=AclPermission.ALLOW), True),
        (AclFilter(permission=AclPermission.DENY), False),
        (
            AclFilter(ResourceType.TOPIC, "orders", LITERAL, "User:alice", "*", AclOperation.READ, AclPermission.ALLOW),
            True,
        ),
        (
            AclFilter(ResourceType.TOPIC, "orders", LITERAL, "User:alice", "*", AclOperation.READ, AclPermission.DENY),
            False,
        ),
    ],
)
def test_every_given_field_compares_exactly(acl_filter: AclFilter, expected: bool) -> None:
    assert filter_matches(acl_filter, binding()) is expected


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (binding("orders"), True),
        (binding("*"), True),
        (binding("ord", PREFIXED), True),
        (binding("orders", PREFIXED), True),
        (binding("o", PREFIXED), True),
        (binding("orders-eu", PREFIXED), False),
        (binding("pay", PREFIXED), False),
        (binding("orders-eu"), False),
        (binding("order"), False),
        (binding("*", PREFIXED), False),
    ],
)
def test_match_selects_the_bindings_that_apply_to_the_name(candidate: AclBinding, expected: bool) -> None:
    assert filter_matches(AclFilter(resource_name="orders", pattern_type=MATCH), candidate) is expected


def test_a_literal_wildcard_filter_selects_only_the_wildcard_bindings() -> None:
    wildcard = AclFilter(resource_name="*", pattern_type=LITERAL)
    assert filter_matches(wildcard, binding("*"))
    assert not filter_matches(wildcard, binding("orders"))


def test_match_still_compares_the_other_fields() -> None:
    match = AclFilter(ResourceType.TOPIC, "orders", MATCH, permission=AclPermission.DENY)
    assert not filter_matches(match, binding("*"))
    assert filter_matches(match, binding("*", permission=AclPermission.DENY))
    assert not filter_matches(match, binding("*", resource_type=ResourceType.GROUP, permission=AclPermission.DENY))


def test_a_pattern_type_given_as_its_wire_string_compares_like_the_enum() -> None:
    assert filter_matches(AclFilter(pattern_type="PREFIXED"), binding("ord", PREFIXED))
    assert not filter_matches(AclFilter(pattern_type="PREFIXED"), binding("ord"))


def test_match_without_a_resource_name_is_refused() -> None:
    with pytest.raises(ValueError, match="MATCH"):
        AclFilter(pattern_type=MATCH)


def test_an_unknown_pattern_type_is_refused() -> None:
    with pytest.raises(ValueError, match="SUFFIXED"):
        AclFilter(resource_name="orders", pattern_type="SUFFIXED")
