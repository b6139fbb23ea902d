"""Authorization of CreateTopics, DeleteTopics, DescribeConfigs, IncrementalAlterConfigs, AlterConfigs,
InitProducerId and DescribeCluster.

Every request is encoded by kio as a client sends it, answered by the real handlers as
the principal set in ``authn.SESSION``, and decoded by kio. The node is the admin
stand-in of ``test_kadmin`` with the real ``Authorizer`` deciding, over these ACLs:

- ``ops``: CREATE, DESCRIBE_CONFIGS and ALTER_CONFIGS on the cluster;
- ``alice``: CREATE on ``fresh`` and on ``orders``, WRITE on ``orders`` (which implies
  DESCRIBE), DESCRIBE_CONFIGS on ``orders``;
- ``carol``: CREATE on ``orders`` and nothing else;
- ``dana``: DELETE on ``orders``;
- ``erin``: ALTER_CONFIGS on ``orders``;
- ``mallory``: none.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from structlog.testing import capture_logs

from broker.kafka.alter_configs import ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, OpType
from broker.kafka.authn import SESSION, Session
from broker.security.acl import AclBinding, AclOperation, AclPermission, PatternType, Resource, ResourceType
from broker.security.authorizer import Authorizer, Decision
from broker.security.principal import Principal
from tests.unit.kafka.requests import build, request_class
from tests.unit.kafka.stand_in import TOPIC
from tests.unit.kafka.test_kadmin import (
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CLUSTER,
    DESCRIBE_CONFIGS,
    INIT_PRODUCER_ID,
    AdminStandIn,
    create_topics,
    delete_topics,
    describe_configs,
    exchange,
    init_producer_id,
    versions,
)
from tests.unit.kafka.test_kalter_configs import incremental_alter, legacy_alter

TOPIC_TYPE, BROKER_TYPE = 2, 4
HOST = "10.0.0.9"


def allow(who: str, operation: AclOperation, resource_type: ResourceType, name: str) -> AclBinding:
    return AclBinding(resource_type, name, PatternType.LITERAL, f"User:{who}", "*", operation, AclPermission.ALLOW)


ACLS = (
    allow("ops", AclOperation.CREATE, ResourceType.CLUSTER, "kafka-cluster"),
    allow("ops", AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, "kafka-cluster"),
    allow("ops", AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, "kafka-cluster"),
    allow("alice", AclOperation.CREATE, ResourceType.TOPIC, "fresh"),
    allow("alice", AclOperation.CREATE, ResourceType.TOPIC, TOPIC),
    allow("alice", AclOperation.WRITE, ResourceType.TOPIC, TOPIC),
    allow("alice", AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, TOPIC),
    allow("carol", AclOperation.CREATE, ResourceType.TOPIC, TOPIC),
    allow("dana", AclOperation.DELETE, ResourceType.TOPIC, TOPIC),
    allow("erin", AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, TOPIC),
)


@dataclass
class AuthorizingSecurity:
    """The two questions the handlers ask ``NodeSecurity``, answered by the real authorizer."""

    authorizer: Authorizer

    def decide(self, principal: Principal, host: str, operation: AclOperation, resource: Resource) -> Decision:
        return self.authorizer.authorize(principal, host, operation, resource)

    def allows_any(self, principal: Principal, host: str, operation: AclOperation, resource_type: ResourceType) -> bool:
        return self.authorizer.allows_any(principal, host, operation, resource_type)


@dataclass
class SecuredAdminStandIn(AdminStandIn):
    security: AuthorizingSecurity = field(default_factory=lambda: AuthorizingSecurity(Authorizer(ACLS)))


@contextmanager
def signed_in(user: str) -> Iterator[None]:
    """The connection's session, as the listener sets it after SASL (each ``exchange`` copies the context)."""
    token = SESSION.set(Session(HOST, Principal.user(user), "PLAIN"))
    try:
        yield
    finally:
        SESSION.reset(token)


def as_user(user: str, node: AdminStandIn, api_key: int, version: int, body: Any) -> Any:
    with signed_in(user):
        return exchange(node, api_key, version, body)


def denials(logs: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [
        (entry["operation"], entry["resource_type"], entry["resource_name"])
        for entry in logs
        if entry["event"] == "audit.denied"
    ]


# ------------------------------------------------------------------ CreateTopics


@pytest.mark.parametrize("validate_only", [False, True])
@pytest.mark.parametrize("version", versions(CREATE_TOPICS))
def test_create_without_create_on_cluster_or_topic_is_refused_and_creates_nothing(
    version: int, validate_only: bool
) -> None:
    node = SecuredAdminStandIn()
    body = create_topics(version, [("fresh", 1, 1, {}), ("other", 1, 1, {})], validate_only=validate_only)
    response = as_user("mallory", node, CREATE_TOPICS, version, body)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("fresh", ErrorCode.topic_authorization_failed),
        ("other", ErrorCode.topic_authorization_failed),
    ]
    if version >= 1:
        assert response.topics[0].error_message == "User:mallory is not authorized to CREATE topic 'fresh'"
    assert node.created == []
    assert set(node.topics) == {TOPIC}


def test_create_on_the_topic_allows_that_topic_only_and_the_cluster_check_is_not_audited() -> None:
    node = SecuredAdminStandIn()
    with capture_logs() as logs:
        response = as_user(
            "alice", node, CREATE_TOPICS, 7, create_topics(7, [("fresh", 1, 1, {}), ("other", 1, 1, {})])
        )
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("fresh", ErrorCode.none),
        ("other", ErrorCode.topic_authorization_failed),
    ]
    assert [c[0] for c in node.created] == ["fresh"]
    assert denials(logs) == [("CREATE", "TOPIC", "other")]


def test_create_on_the_cluster_allows_any_topic() -> None:
    node = SecuredAdminStandIn()
    response = as_user("ops", node, CREATE_TOPICS, 7, create_topics(7, [("a", 1, 1, {}), ("b", 1, 1, {})]))
    assert [t.error_code for t in response.topics] == [ErrorCode.none, ErrorCode.none]
    assert [c[0] for c in node.created] == ["a", "b"]


@pytest.mark.parametrize("validate_only", [False, True])
def test_an_existing_topic_is_already_existing_only_to_a_principal_that_may_describe_it(validate_only: bool) -> None:
    body = create_topics(7, [(TOPIC, 1, 1, {})], validate_only=validate_only)
    describer = as_user("alice", SecuredAdminStandIn(), CREATE_TOPICS, 7, body)
    blind = as_user("carol", SecuredAdminStandIn(), CREATE_TOPICS, 7, body)
    assert describer.topics[0].error_code == ErrorCode.topic_already_exists
    assert blind.topics[0].error_code == ErrorCode.topic_authorization_failed
    assert "already exists" not in blind.topics[0].error_message


# ------------------------------------------------------------------ DeleteTopics


@pytest.mark.parametrize("version", versions(DELETE_TOPICS))
def test_delete_needs_delete_and_hides_the_topic_from_who_may_not_describe_it(version: int) -> None:
    node = SecuredAdminStandIn()
    hidden = as_user("mallory", node, DELETE_TOPICS, version, delete_topics(version, [TOPIC, "never-was"]))
    assert [(r.name, r.error_code) for r in hidden.responses] == [
        (TOPIC, ErrorCode.unknown_topic_or_partition),
        ("never-was", ErrorCode.unknown_topic_or_partition),
    ]
    refused = as_user("alice", node, DELETE_TOPICS, version, delete_topics(version, [TOPIC]))
    assert [(r.name, r.error_code) for r in refused.responses] == [(TOPIC, ErrorCode.topic_authorization_failed)]
    assert node.deleted == []
    assert TOPIC in node.topics
    allowed = as_user("dana", node, DELETE_TOPICS, version, delete_topics(version, [TOPIC]))
    assert [(r.name, r.error_code) for r in allowed.responses] == [(TOPIC, ErrorCode.none)]
    assert node.deleted == [TOPIC]


def test_a_hidden_topic_reads_exactly_as_a_missing_one() -> None:
    node = SecuredAdminStandIn()
    response = as_user("mallory", node, DELETE_TOPICS, 5, delete_topics(5, [TOPIC, "never-was"]))
    existing, missing = response.responses
    assert existing.error_message == f"topic '{TOPIC}' does not exist"
    assert missing.error_message == "topic 'never-was' does not exist"


# ------------------------------------------------------------------ DescribeConfigs


@pytest.mark.parametrize("version", versions(DESCRIBE_CONFIGS))
def test_describe_configs_needs_describe_configs_on_the_topic_or_the_cluster(version: int) -> None:
    resources: list[tuple[int, str, tuple[str, ...] | None]] = [
        (TOPIC_TYPE, TOPIC, None),
        (TOPIC_TYPE, "missing", None),
        (BROKER_TYPE, "1", None),
    ]
    node = SecuredAdminStandIn()
    mallory = as_user("mallory", node, DESCRIBE_CONFIGS, version, describe_configs(version, resources))
    assert [(r.error_code, r.configs) for r in mallory.results] == [
        (ErrorCode.topic_authorization_failed, ()),
        (ErrorCode.topic_authorization_failed, ()),
        (ErrorCode.cluster_authorization_failed, ()),
    ]
    alice = as_user("alice", node, DESCRIBE_CONFIGS, version, describe_configs(version, resources))
    topic, missing, broker = alice.results
    assert topic.error_code == ErrorCode.none
    assert {c.name: c.value for c in topic.configs}["retention.ms"] == "60000"
    assert missing.error_code == ErrorCode.topic_authorization_failed
    assert broker.error_code == ErrorCode.cluster_authorization_failed
    ops = as_user("ops", node, DESCRIBE_CONFIGS, version, describe_configs(version, resources[2:]))
    assert ops.results[0].error_code == ErrorCode.none
    assert "broker.id" in {c.name for c in ops.results[0].configs}


# ------------------------------------------------------------------ IncrementalAlterConfigs, AlterConfigs


def alter_body(api_key: int, version: int) -> Any:
    """``segment.ms`` set on ``orders``, a topic that does not exist, and nothing on broker 1."""
    if api_key == INCREMENTAL_ALTER_CONFIGS:
        return incremental_alter(
            version,
            [
                (TOPIC_TYPE, TOPIC, [("segment.ms", OpType.SET, "1000")]),
                (TOPIC_TYPE, "missing", []),
                (BROKER_TYPE, "1", []),
            ],
        )
    return legacy_alter(
        version, [(TOPIC_TYPE, TOPIC, [("segment.ms", "1000")]), (TOPIC_TYPE, "missing", []), (BROKER_TYPE, "1", [])]
    )


ALTER_VERSIONS = [(key, version) for key in (INCREMENTAL_ALTER_CONFIGS, ALTER_CONFIGS) for version in versions(key)]


@pytest.mark.parametrize(("api_key", "version"), ALTER_VERSIONS)
def test_alter_configs_needs_alter_configs_on_the_topic_or_for_a_broker_the_cluster(api_key: int, version: int) -> None:
    node = SecuredAdminStandIn()
    with capture_logs() as logs:
        mallory = as_user("mallory", node, api_key, version, alter_body(api_key, version))
    assert [(r.error_code, r.error_message) for r in mallory.responses] == [
        (ErrorCode.topic_authorization_failed, "User:mallory is not authorized to ALTER_CONFIGS topic 'orders'"),
        (ErrorCode.topic_authorization_failed, "User:mallory is not authorized to ALTER_CONFIGS topic 'missing'"),
        (
            ErrorCode.cluster_authorization_failed,
            "User:mallory is not authorized to ALTER_CONFIGS cluster 'kafka-cluster'",
        ),
    ]
    assert denials(logs) == [
        ("ALTER_CONFIGS", "TOPIC", TOPIC),
        ("ALTER_CONFIGS", "TOPIC", "missing"),
        ("ALTER_CONFIGS", "CLUSTER", "kafka-cluster"),
    ]
    describer = as_user("alice", node, api_key, version, alter_body(api_key, version))
    assert describer.responses[0].error_code == ErrorCode.topic_authorization_failed
    assert node.controller_gateway.altered == []

    erin = as_user("erin", node, api_key, version, alter_body(api_key, version))
    assert [r.error_code for r in erin.responses] == [
        ErrorCode.none,
        ErrorCode.topic_authorization_failed,
        ErrorCode.cluster_authorization_failed,
    ]
    assert node.topics[TOPIC]["segment.ms"] == "1000"
    ops = as_user("ops", node, api_key, version, alter_body(api_key, version))
    assert [r.error_code for r in ops.responses] == [
        ErrorCode.topic_authorization_failed,
        ErrorCode.topic_authorization_failed,
        ErrorCode.none,
    ]


# ------------------------------------------------------------------ InitProducerId


@pytest.mark.parametrize("version", versions(INIT_PRODUCER_ID))
def test_an_id_needs_write_on_some_topic_and_a_refusal_allocates_nothing(version: int) -> None:
    node = SecuredAdminStandIn()
    with capture_logs() as logs:
        refused = as_user("mallory", node, INIT_PRODUCER_ID, version, init_producer_id(version))
    assert (refused.error_code, refused.producer_id, refused.producer_epoch) == (
        ErrorCode.cluster_authorization_failed,
        -1,
        -1,
    )
    assert node.next_producer_id == 4000
    assert denials(logs) == [("WRITE", "TOPIC", None)]
    granted = as_user("alice", node, INIT_PRODUCER_ID, version, init_producer_id(version))
    assert (granted.error_code, granted.producer_id, granted.producer_epoch) == (ErrorCode.none, 4000, 0)


def test_a_create_only_principal_gets_no_producer_id() -> None:
    node = SecuredAdminStandIn()
    response = as_user("carol", node, INIT_PRODUCER_ID, 4, init_producer_id(4))
    assert response.error_code == ErrorCode.cluster_authorization_failed
    assert node.next_producer_id == 4000


# ------------------------------------------------------------------ DescribeCluster


@pytest.mark.parametrize("version", versions(DESCRIBE_CLUSTER))
def test_describe_cluster_is_served_to_any_authenticated_principal(version: int) -> None:
    body = build(
        request_class(DESCRIBE_CLUSTER, version, "DescribeClusterRequest"),
        include_cluster_authorized_operations=False,
        endpoint_type=1,
        include_fenced_brokers=False,
    )
    response = as_user("mallory", SecuredAdminStandIn(), DESCRIBE_CLUSTER, version, body)
    assert (response.error_code, [b.broker_id for b in response.brokers]) == (ErrorCode.none, [1])
