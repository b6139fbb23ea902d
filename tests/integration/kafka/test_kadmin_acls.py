"""CreateAcls, DescribeAcls and DeleteAcls from librdkafka's AdminClient: the same ACLs the HTTP routes keep.

Against the Kafka tier's cluster (no authentication, so every principal may call them;
who may is ``tests/unit/kafka``'s and the HTTP authorization matrix's business).
"""

from __future__ import annotations

from typing import cast

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.support.cluster import Cluster

pytestmark = pytest.mark.integration

TIMEOUT_S = 20
ANY = cast(str, None)
"""A filter's string field left null, which librdkafka sends as "any" (its stubs type the fields ``str``)."""


def test_acls_round_trip_through_the_kafka_door_and_show_over_http(kafka_cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    readers = AclBinding(
        ResourceType.TOPIC,
        "acl-orders-",
        ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    denied = AclBinding(
        ResourceType.GROUP,
        "acl-group",
        ResourcePatternType.LITERAL,
        "User:mallory",
        "10.0.0.1",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    for future in admin.create_acls([readers, denied], request_timeout=TIMEOUT_S).values():
        assert future.result(TIMEOUT_S) is None
    wrong = AclBinding(
        ResourceType.BROKER,
        "not-the-cluster",
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.ALTER,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException, match="kafka-cluster"):
        admin.create_acls([wrong], request_timeout=TIMEOUT_S)[wrong].result(TIMEOUT_S)

    over_http = kafka_cluster.api("GET", "/acls")["data"]
    assert {(a["resource_name"], a["principal"], a["operation"], a["permission"]) for a in over_http} >= {
        ("acl-orders-", "User:alice", "READ", "ALLOW"),
        ("acl-group", "User:mallory", "ALL", "DENY"),
    }

    applying = AclBindingFilter(
        ResourceType.TOPIC,
        "acl-orders-eu",
        ResourcePatternType.MATCH,
        ANY,
        ANY,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert admin.describe_acls(applying, request_timeout=TIMEOUT_S).result(TIMEOUT_S) == [readers]
    alices = AclBindingFilter(
        ResourceType.ANY, ANY, ResourcePatternType.ANY, "User:alice", ANY, AclOperation.ANY, AclPermissionType.ANY
    )
    (deleted,) = admin.delete_acls([alices], request_timeout=TIMEOUT_S).values()
    assert deleted.result(TIMEOUT_S) == [readers]
    assert admin.describe_acls(alices, request_timeout=TIMEOUT_S).result(TIMEOUT_S) == []
    left = [(a["resource_name"], a["principal"]) for a in kafka_cluster.api("GET", "/acls")["data"]]
    assert ("acl-group", "User:mallory") in left and ("acl-orders-", "User:alice") not in left
