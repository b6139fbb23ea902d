"""Kafka's StandardAuthorizer rules: DENY wins, implied DESCRIBE, wildcards, prefixes, allow_if_no_acl."""

from __future__ import annotations

import pytest

from broker.security.acl import AclBinding, AclOperation, AclPermission, PatternType, Resource, ResourceType
from broker.security.authorizer import (
    ALLOWED_BROKER,
    ALLOWED_BY_ACL,
    ALLOWED_SUPER_USER,
    DENIED_BY_ACL,
    NO_ACL_FOR_RESOURCE_ALLOWED,
    NO_ACL_FOR_RESOURCE_DENIED,
    NO_ACL_MATCHED,
    Authorizer,
    Decision,
)
from broker.security.principal import ANONYMOUS, Principal

ALICE = Principal.user("alice")
BOB = Principal.user("bob")
HOST = "10.0.0.1"
ORDERS = Resource.topic("orders")
Op = AclOperation
ALLOW, DENY = AclPermission.ALLOW, AclPermission.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


def acl(
    operation: AclOperation = Op.READ,
    permission: AclPermission = ALLOW,
    name: str = "orders",
    pattern: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    resource_type: ResourceType = ResourceType.TOPIC,
) -> AclBinding:
    return AclBinding(resource_type, name, pattern, principal, host, operation, permission)


def may(
    bindings: list[AclBinding],
    operation: AclOperation = Op.READ,
    resource: Resource = ORDERS,
    principal: Principal = ALICE,
    host: str = HOST,
    allow_if_no_acl: bool = False,
) -> Decision:
    return Authorizer(bindings, allow_if_no_acl=allow_if_no_acl).authorize(principal, host, operation, resource)


def test_a_decision_is_truthy_exactly_when_allowed() -> None:
    assert Decision(True, "x")
    assert not Decision(False, "x")


def test_an_allow_of_the_operation_allows() -> None:
    assert may([acl(Op.READ)]) == ALLOWED_BY_ACL


@pytest.mark.parametrize(
    "bindings",
    [
        [acl(Op.READ), acl(Op.READ, DENY)],
        [acl(Op.READ, DENY), acl(Op.READ)],
        [acl(Op.ALL), acl(Op.READ, DENY)],
        [acl(Op.READ), acl(Op.ALL, DENY)],
        [acl(Op.READ), acl(Op.READ, DENY, name="*")],
        [acl(Op.READ), acl(Op.READ, DENY, name="ord", pattern=PREFIXED)],
        [acl(Op.READ), acl(Op.READ, DENY, principal="User:*")],
        [acl(Op.READ), acl(Op.READ, DENY, host=HOST)],
        [acl(Op.READ, name="*"), acl(Op.READ, DENY)],
    ],
)
def test_deny_wins_over_allow(bindings: list[AclBinding]) -> None:
    assert may(bindings) == DENIED_BY_ACL


@pytest.mark.parametrize("operation", [Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.CREATE])
def test_deny_all_denies_every_operation(operation: AclOperation) -> None:
    assert may([acl(Op.ALL), acl(Op.ALL, DENY)], operation) == DENIED_BY_ACL


@pytest.mark.parametrize("operation", [Op.READ, Op.WRITE, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS])
def test_allow_all_allows_every_operation(operation: AclOperation) -> None:
    assert may([acl(Op.ALL)], operation) == ALLOWED_BY_ACL


@pytest.mark.parametrize("implying", [Op.READ, Op.WRITE, Op.DELETE, Op.ALTER])
def test_describe_is_implied_by_read_write_delete_and_alter(implying: AclOperation) -> None:
    assert may([acl(implying)], Op.DESCRIBE) == ALLOWED_BY_ACL


@pytest.mark.parametrize("other", [Op.CREATE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS])
def test_describe_is_not_implied_by_other_operations(other: AclOperation) -> None:
    assert may([acl(other)], Op.DESCRIBE) == NO_ACL_MATCHED


def test_describe_configs_is_implied_by_alter_configs() -> None:
    assert may([acl(Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS) == ALLOWED_BY_ACL


@pytest.mark.parametrize(
    ("granted", "asked"),
    [(Op.DESCRIBE, Op.READ), (Op.DESCRIBE, Op.WRITE), (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS), (Op.READ, Op.WRITE)],
)
def test_implication_runs_one_way_only(granted: AclOperation, asked: AclOperation) -> None:
    assert may([acl(granted)], asked) == NO_ACL_MATCHED


@pytest.mark.parametrize(("denied", "asked"), [(Op.READ, Op.DESCRIBE), (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS)])
def test_implication_does_not_widen_a_deny(denied: AclOperation, asked: AclOperation) -> None:
    assert may([acl(Op.ALL), acl(denied, DENY)], asked) == ALLOWED_BY_ACL


@pytest.mark.parametrize(
    "binding",
    [
        acl(principal="User:*"),
        acl(host="*"),
        acl(host=HOST),
        acl(name="*"),
        acl(name="ord", pattern=PREFIXED),
        acl(name="orders", pattern=PREFIXED),
        acl(name="*", principal="User:*", host="*"),
    ],
)
def test_wildcards_and_prefixes_apply(binding: AclBinding) -> None:
    assert may([binding]) == ALLOWED_BY_ACL


@pytest.mark.parametrize(
    "binding",
    [
        acl(principal="User:bob"),
        acl(principal="User:alice*"),
        acl(host="10.0.0.2"),
        acl(Op.WRITE),
    ],
)
def test_a_binding_for_another_principal_host_pattern_or_operation_does_not_allow(binding: AclBinding) -> None:
    assert may([binding]) == NO_ACL_MATCHED


@pytest.mark.parametrize(
    ("binding", "resource"),
    [
        (acl(name="order"), ORDERS),
        (acl(name="orders-eu"), ORDERS),
        (acl(name="orders-eu", pattern=PREFIXED), ORDERS),
        (acl(name="*", pattern=PREFIXED), ORDERS),
        (acl(resource_type=ResourceType.GROUP), ORDERS),
        (acl(name="*", resource_type=ResourceType.GROUP), ORDERS),
        (acl(), Resource.group("orders")),
        (acl(name="*", resource_type=ResourceType.GROUP), Resource.cluster()),
    ],
)
def test_a_binding_on_another_resource_leaves_the_resource_without_acl(binding: AclBinding, resource: Resource) -> None:
    assert may([binding], resource=resource) == NO_ACL_FOR_RESOURCE_DENIED
    assert may([binding], resource=resource, allow_if_no_acl=True) == NO_ACL_FOR_RESOURCE_ALLOWED


def test_without_any_binding_allow_if_no_acl_decides() -> None:
    assert may([]) == NO_ACL_FOR_RESOURCE_DENIED
    assert may([], allow_if_no_acl=True) == NO_ACL_FOR_RESOURCE_ALLOWED


@pytest.mark.parametrize(
    "binding",
    [
        acl(principal="User:bob"),
        acl(Op.WRITE),
        acl(host="10.0.0.2"),
        acl(name="*", principal="User:bob"),
        acl(name="ord", pattern=PREFIXED, principal="User:bob"),
        acl(Op.READ, DENY, principal="User:bob"),
    ],
)
def test_any_acl_on_the_resource_turns_allow_if_no_acl_off(binding: AclBinding) -> None:
    assert may([binding], allow_if_no_acl=True) == NO_ACL_MATCHED


def test_allow_if_no_acl_does_not_override_a_deny() -> None:
    assert may([acl(Op.READ, DENY)], allow_if_no_acl=True) == DENIED_BY_ACL


def test_brokers_may_do_anything_despite_a_deny() -> None:
    authorizer = Authorizer([acl(Op.ALL, DENY, name="*", principal="User:*")])
    assert authorizer.authorize(Principal.broker(2), HOST, Op.WRITE, ORDERS) == ALLOWED_BROKER
    assert authorizer.authorize(Principal.broker(2), HOST, Op.ALTER, Resource.cluster()) == ALLOWED_BROKER


def test_super_users_may_do_anything_despite_a_deny() -> None:
    authorizer = Authorizer([acl(Op.ALL, DENY, name="*", principal="User:*")], super_users=frozenset({"User:admin"}))
    assert authorizer.authorize(Principal.user("admin"), HOST, Op.DELETE, ORDERS) == ALLOWED_SUPER_USER
    assert authorizer.authorize(ALICE, HOST, Op.DELETE, ORDERS) == DENIED_BY_ACL


def test_super_users_are_matched_by_type_and_name() -> None:
    authorizer = Authorizer(super_users=frozenset({"User:admin"}))
    assert authorizer.authorize(Principal("Other", "admin"), HOST, Op.READ, ORDERS) == NO_ACL_FOR_RESOURCE_DENIED


def test_anonymous_is_an_ordinary_principal() -> None:
    assert may([acl(principal="User:*")], principal=ANONYMOUS) == ALLOWED_BY_ACL
    assert may([acl()], principal=ANONYMOUS) == NO_ACL_MATCHED


def test_cluster_and_group_resources_are_authorized_alike() -> None:
    cluster = acl(Op.ALTER, name="kafka-cluster", resource_type=ResourceType.CLUSTER)
    group = acl(Op.READ, name="payments-", pattern=PREFIXED, resource_type=ResourceType.GROUP)
    assert may([cluster, group], Op.ALTER, Resource.cluster()) == ALLOWED_BY_ACL
    assert may([cluster, group], Op.DESCRIBE, Resource.cluster()) == ALLOWED_BY_ACL
    assert may([cluster, group], Op.READ, Resource.group("payments-eu")) == ALLOWED_BY_ACL
    assert may([cluster, group], Op.READ, Resource.topic("payments-eu")) == NO_ACL_FOR_RESOURCE_DENIED


def test_duplicate_bindings_count_once_and_change_nothing() -> None:
    assert may([acl(), acl(), acl(Op.READ, DENY)]) == DENIED_BY_ACL
    assert may([acl(), acl()]) == ALLOWED_BY_ACL


def test_bindings_may_come_from_a_one_shot_iterable() -> None:
    authorizer = Authorizer(iter([acl()]))
    assert authorizer.authorize(ALICE, HOST, Op.READ, ORDERS)
    assert authorizer.authorize(ALICE, HOST, Op.READ, ORDERS)


def any_topic(
    bindings: list[AclBinding],
    operation: AclOperation = Op.WRITE,
    principal: Principal = ALICE,
    allow_if_no_acl: bool = False,
    resource_type: ResourceType = ResourceType.TOPIC,
) -> bool:
    authorizer = Authorizer(bindings, super_users=frozenset({"User:admin"}), allow_if_no_acl=allow_if_no_acl)
    return authorizer.allows_any(principal, HOST, operation, resource_type)


@pytest.mark.parametrize(
    "bindings",
    [
        [acl(Op.WRITE)],
        [acl(Op.ALL)],
        [acl(Op.WRITE, name="*")],
        [acl(Op.WRITE, name="ord", pattern=PREFIXED)],
        [acl(Op.WRITE, principal="User:*", host=HOST)],
        [acl(Op.WRITE), acl(Op.WRITE, DENY, name="payments")],
        [acl(Op.WRITE), acl(Op.WRITE, DENY, name="orders-", pattern=PREFIXED)],
        [acl(Op.WRITE, name="ord", pattern=PREFIXED), acl(Op.WRITE, DENY, name="ord")],
        [acl(Op.WRITE, name="*"), acl(Op.WRITE, DENY, name="", pattern=PREFIXED)],
        [acl(Op.WRITE), acl(Op.READ, DENY, name="*")],
    ],
)
def test_allows_any_when_some_allow_is_not_covered_by_a_deny(bindings: list[AclBinding]) -> None:
    assert any_topic(bindings)


@pytest.mark.parametrize(
    "bindings",
    [
        [],
        [acl(Op.READ)],
        [acl(Op.WRITE, principal="User:bob")],
        [acl(Op.WRITE, host="10.0.0.2")],
        [acl(Op.WRITE, resource_type=ResourceType.GROUP)],
        [acl(Op.WRITE), acl(Op.WRITE, DENY, name="*")],
        [acl(Op.WRITE), acl(Op.ALL, DENY, name="*", principal="User:*")],
        [acl(Op.WRITE), acl(Op.WRITE, DENY)],
        [acl(Op.WRITE), acl(Op.WRITE, DENY, name="ord", pattern=PREFIXED)],
        [acl(Op.WRITE, name="orders-", pattern=PREFIXED), acl(Op.WRITE, DENY, name="ord", pattern=PREFIXED)],
    ],
)
def test_allows_any_not_without_an_uncovered_allow(bindings: list[AclBinding]) -> None:
    assert not any_topic(bindings)


def test_allows_any_counts_implied_operations_for_allow_only() -> None:
    assert any_topic([acl(Op.READ)], Op.DESCRIBE)
    assert any_topic([acl(Op.ALL), acl(Op.READ, DENY, name="*")], Op.DESCRIBE)
    assert not any_topic([acl(Op.DESCRIBE)], Op.READ)


def test_allows_any_for_brokers_and_super_users_despite_a_wildcard_deny() -> None:
    deny_everyone = [acl(Op.ALL, DENY, name="*", principal="User:*")]
    assert any_topic(deny_everyone, principal=Principal.broker(1))
    assert any_topic(deny_everyone, principal=Principal.user("admin"))
    assert not any_topic(deny_everyone)


@pytest.mark.parametrize(
    "bindings",
    [
        [],
        [acl(Op.WRITE, resource_type=ResourceType.GROUP, name="*")],
        [acl(Op.WRITE, DENY, principal="User:bob", name="*", resource_type=ResourceType.GROUP)],
        [acl(Op.WRITE, DENY)],
        [acl(Op.ALL, DENY, name="ord", pattern=PREFIXED)],
    ],
)
def test_allow_if_no_acl_allows_any_while_some_topic_has_no_acl(bindings: list[AclBinding]) -> None:
    assert any_topic(bindings, allow_if_no_acl=True)
    assert not any_topic(bindings)


@pytest.mark.parametrize(
    "bindings",
    [
        [acl(Op.READ, name="*", principal="User:bob")],
        [acl(Op.READ, name="", pattern=PREFIXED, principal="User:bob")],
        [acl(Op.WRITE), acl(Op.WRITE, DENY, name="*")],
    ],
)
def test_allow_if_no_acl_does_not_apply_once_every_topic_has_an_acl(bindings: list[AclBinding]) -> None:
    assert not any_topic(bindings, allow_if_no_acl=True)


def test_allows_any_on_the_cluster_asks_the_one_cluster_resource() -> None:
    cluster = ResourceType.CLUSTER
    alter = acl(Op.ALTER, name="kafka-cluster", resource_type=cluster)
    assert any_topic([alter], Op.ALTER, resource_type=cluster)
    assert any_topic([alter], Op.DESCRIBE, resource_type=cluster)
    assert not any_topic(
        [alter, acl(Op.ALTER, DENY, name="kafka-cluster", resource_type=cluster)], Op.ALTER, resource_type=cluster
    )
    assert any_topic([], Op.ALTER, allow_if_no_acl=True, resource_type=cluster)
    assert not any_topic(
        [acl(Op.READ, name="kafka-cluster", principal="User:bob", resource_type=cluster)],
        Op.ALTER,
        allow_if_no_acl=True,
        resource_type=cluster,
    )
