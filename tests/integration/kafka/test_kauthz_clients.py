"""The admin and producer-id APIs authorized at the Kafka door, with real clients on a secured 3-broker cluster.

On top of ``add_alice_and_mallory``'s users: ``alice`` (READ and WRITE on ``orders-*``) also
gets CREATE, DELETE, DESCRIBE_CONFIGS and ALTER_CONFIGS on ``orders-*`` and
DESCRIBE_CONFIGS on the cluster; ``bob`` may only READ ``orders-eu``; ``mallory`` has no
ACL. confluent-kafka's AdminClient and idempotent producer meet the refusals Kafka
gives, the allowed user succeeds, and the HTTP API answers the same users the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka.admin import (  # type: ignore[import-untyped]
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KafkaPythonResourceType
from kafka.errors import ClusterAuthorizationFailedError  # type: ignore[import-untyped]
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32

from broker.kafka.shapes import build
from tests.integration.kafka.secured import (
    ALICE_PASSWORD,
    MALLORY_PASSWORD,
    TOPIC,
    add_acl,
    add_alice_and_mallory,
    add_user,
    secured_kafka_spec,
    statuses_everywhere,
)
from tests.integration.kafka.test_kadmin_client_quotas import alter as alter_quotas
from tests.integration.kafka.test_kadmin_client_quotas import describe as describe_quotas
from tests.integration.kafka.test_kafka_sasl_plaintext import logged_in
from tests.support.cluster import ADMIN, ADMIN_PASSWORD, Cluster, cluster_fixture
from tests.support.waiting import wait_until
from tests.unit.kafka.requests import millis, request_class

pytestmark = pytest.mark.integration

BOB_PASSWORD = "bob-pw-4"
TIMEOUT_S = 20


NULL = cast(str, None)
"""An ACL filter's string field left null, "any" to librdkafka (its stubs type the fields ``str``)."""
cluster = cluster_fixture(secured_kafka_spec(kafka_tls=False), scope="module")


@pytest.fixture(scope="module")
def secured(cluster: Cluster) -> Cluster:
    add_alice_and_mallory(cluster)
    add_user(cluster, "bob", BOB_PASSWORD)
    add_acl(cluster, "User:bob", "READ", "TOPIC", TOPIC)
    for operation in ("CREATE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"):
        add_acl(cluster, "User:alice", operation, "TOPIC", "orders-", prefixed=True)
    add_acl(cluster, "User:alice", "DESCRIBE_CONFIGS", "CLUSTER", "kafka-cluster")

    def everywhere() -> bool:
        """Every broker applied the last ACL added (the store's changes arrive in order) and knows bob."""
        alice = statuses_everywhere(cluster, "/quotas", "alice", ALICE_PASSWORD)
        return alice == {200} and statuses_everywhere(cluster, f"/topics/{TOPIC}", "bob", BOB_PASSWORD) == {200}

    wait_until(everywhere, "bob and alice's new ACLs on every broker", TIMEOUT_S)
    return cluster


def config(secured: Cluster, username: str, password: str) -> dict[str, str | int | float | bool]:
    return {
        "bootstrap.servers": secured.bootstrap(),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": username,
        "sasl.password": password,
    }


def admin_error(future: object) -> int | None:
    """The Kafka error code a future fails with, None when it succeeds."""
    try:
        future.result(timeout=TIMEOUT_S)  # type: ignore[attr-defined]
    except KafkaException as error:
        return error.args[0].code()
    return None


def set_config(kind: ResourceType, name: str, config: str, value: str) -> ConfigResource:
    """An IncrementalAlterConfigs resource that SETs one config."""
    entry = ConfigEntry(config, value, incremental_operation=AlterConfigOpType.SET)
    return ConfigResource(kind, name, incremental_configs=[entry])


def altered(admin: AdminClient, resource: ConfigResource) -> int | None:
    """The error code of an incremental alter of ``resource`` alone (a broker's goes to that broker)."""
    return admin_error(admin.incremental_alter_configs([resource])[resource])


def topic_status(secured: Cluster, name: str) -> int:
    return secured.v3("GET", f"/topics/{name}")[0]


def test_a_user_without_acls_is_refused_every_admin_request_but_describe_cluster(secured: Cluster) -> None:
    admin = AdminClient(config(secured, "mallory", MALLORY_PASSWORD))
    mallory = secured.headers("mallory", MALLORY_PASSWORD)
    for validate_only in (True, False):
        created = admin.create_topics([NewTopic("orders-mallory", 1, 3)], validate_only=validate_only)
        assert admin_error(created["orders-mallory"]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    status, reply = secured.v3(
        "POST",
        "/topics",
        {"topic_name": "orders-mallory", "partitions_count": 1, "replication_factor": 3},
        headers=mallory,
    )
    assert status == 403, reply
    assert topic_status(secured, "orders-mallory") == 404

    assert admin_error(admin.delete_topics([TOPIC])[TOPIC]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert secured.v3("DELETE", f"/topics/{TOPIC}", headers=mallory)[0] == 404
    assert topic_status(secured, TOPIC) == 200

    topic, broker = ConfigResource(ConfigResource.Type.TOPIC, TOPIC), ConfigResource(ConfigResource.Type.BROKER, "1")
    described = admin.describe_configs([topic, broker])
    assert admin_error(described[topic]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert admin_error(described[broker]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert secured.v3("GET", "/quotas", headers=mallory)[0] == 403

    topic_alter = set_config(ConfigResource.Type.TOPIC, TOPIC, "retention.ms", "1000")
    assert altered(admin, topic_alter) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    broker_alter = set_config(ConfigResource.Type.BROKER, "1", "log.retention.ms", "1000")
    assert altered(admin, broker_alter) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert secured.v3("PUT", f"/topics/{TOPIC}/configs/retention.ms", {"value": "1000"}, headers=mallory)[0] == 403

    cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert {f"{n.host}:{n.port}" for n in cluster.nodes} == set(secured.kafka_addresses.values())
    assert secured.v3("GET", "/brokers", headers=mallory)[0] == 200
    assert "audit.denied" in secured.logs()


def test_a_user_who_may_describe_but_not_delete_is_told_so(secured: Cluster) -> None:
    admin = AdminClient(config(secured, "bob", BOB_PASSWORD))
    assert admin_error(admin.delete_topics([TOPIC])[TOPIC]) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    status, reply = secured.v3("DELETE", f"/topics/{TOPIC}", headers=secured.headers("bob", BOB_PASSWORD))
    assert status == 403, reply
    assert topic_status(secured, TOPIC) == 200


def test_a_user_with_the_acls_creates_describes_alters_and_deletes(secured: Cluster) -> None:
    admin = AdminClient(config(secured, "alice", ALICE_PASSWORD))
    made = NewTopic("orders-made", 1, 3, config={"retention.ms": "60000"})
    assert admin_error(admin.create_topics([made])["orders-made"]) is None
    assert admin_error(admin.create_topics([NewTopic("invoices", 1, 3)])["invoices"]) == (
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    )
    wait_until(lambda: topic_status(secured, "orders-made") == 200, "orders-made created", TIMEOUT_S)

    topic, broker = (
        ConfigResource(ConfigResource.Type.TOPIC, "orders-made"),
        ConfigResource(ConfigResource.Type.BROKER, "1"),
    )
    described = admin.describe_configs([topic, broker])
    assert described[topic].result(timeout=TIMEOUT_S)["retention.ms"].value == "60000"
    assert described[broker].result(timeout=TIMEOUT_S)["broker.id"].value == "1"
    assert secured.v3("GET", "/quotas", headers=secured.headers("alice", ALICE_PASSWORD))[0] == 200

    assert altered(admin, set_config(ConfigResource.Type.TOPIC, "orders-made", "retention.ms", "120000")) is None
    alice = secured.headers("alice", ALICE_PASSWORD)
    wait_until(
        lambda: (
            secured.v3("GET", "/topics/orders-made/configs/retention.ms", headers=alice)[1].get("value") == "120000"
        ),
        "the altered retention.ms over HTTP",
        TIMEOUT_S,
    )
    broker_alter = set_config(ConfigResource.Type.BROKER, "1", "log.retention.ms", "1000")
    assert altered(admin, broker_alter) == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    assert admin_error(admin.delete_topics(["orders-made"])["orders-made"]) is None
    wait_until(lambda: topic_status(secured, "orders-made") == 404, "orders-made deleted", TIMEOUT_S)


def idempotent_producer(secured: Cluster, username: str, password: str) -> Producer:
    """An idempotent producer as ``username``: it asks for its producer id (InitProducerId) as it starts."""
    return Producer({**config(secured, username, password), "enable.idempotence": True})


def polled_until(producer: Producer, done: Callable[[], bool]) -> None:
    """Serve the producer's callbacks until ``done``; confluent-kafka raises a fatal error from ``poll``."""
    deadline = time.monotonic() + TIMEOUT_S
    while not done() and time.monotonic() < deadline:
        producer.poll(0.2)


def test_an_idempotent_producer_needs_write_on_some_topic(secured: Cluster) -> None:
    refused = idempotent_producer(secured, "mallory", MALLORY_PASSWORD)
    with pytest.raises(KafkaException) as raised:
        polled_until(refused, lambda: False)
    fatal = raised.value.args[0]
    assert (fatal.code(), fatal.fatal()) == (KafkaError.CLUSTER_AUTHORIZATION_FAILED, True)
    assert secured.v3("POST", "/producer-ids", headers=secured.headers("mallory", MALLORY_PASSWORD))[0] == 403

    allowed = idempotent_producer(secured, "alice", ALICE_PASSWORD)
    delivered: list = []
    allowed.produce(TOPIC, value=b"idempotent", partition=0, on_delivery=lambda error, _: delivered.append(error))
    polled_until(allowed, lambda: bool(delivered))
    assert delivered == [None]
    status, reply = secured.v3("POST", "/producer-ids", headers=secured.headers("alice", ALICE_PASSWORD))
    assert (status, reply["producer_epoch"]) == (200, 0)


def test_acls_delete_records_and_partitions_need_their_acls_at_the_kafka_door(secured: Cluster) -> None:
    """ALTER/DESCRIBE on the cluster for the ACL APIs, DELETE on the topic for DeleteRecords, ALTER for
    CreatePartitions: refused to a user without them (and the topic hidden from one who may not even
    DESCRIBE it), as the HTTP routes refuse them; nothing changes."""
    mallory = AdminClient(config(secured, "mallory", MALLORY_PASSWORD))
    acl = AclBinding(
        ResourceType.TOPIC,
        "orders-",
        ResourcePatternType.PREFIXED,
        "User:mallory",
        "*",
        AclOperation.ALL,
        AclPermissionType.ALLOW,
    )
    assert admin_error(mallory.create_acls([acl])[acl]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    everything = AclBindingFilter(
        ResourceType.ANY, NULL, ResourcePatternType.ANY, NULL, NULL, AclOperation.ANY, AclPermissionType.ANY
    )
    listing = KafkaAdminClient(
        bootstrap_servers=secured.bootstrap(),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="mallory",
        sasl_plain_password=MALLORY_PASSWORD,
    )
    any_acl = ACLFilter(
        NULL,
        NULL,
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(KafkaPythonResourceType.ANY, NULL, ACLResourcePatternType.ANY),
    )
    # kafka-python's: librdkafka's describe_acls drops the answer's error and returns an empty list
    with closing(listing), pytest.raises(ClusterAuthorizationFailedError, match="not authorized to DESCRIBE cluster"):
        listing.describe_acls(any_acl)
    (deleted,) = mallory.delete_acls([everything]).values()
    assert admin_error(deleted) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    bob = AdminClient(config(secured, "bob", BOB_PASSWORD))  # he may READ the topic, so librdkafka finds its leader
    (trimmed,) = bob.delete_records([TopicPartition(TOPIC, 0, 0)]).values()
    assert admin_error(trimmed) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grown = bob.create_partitions([NewPartitions(TOPIC, 9)])[TOPIC]
    assert admin_error(grown) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    hidden = mallory.create_partitions([NewPartitions(TOPIC, 9)])[TOPIC]
    assert admin_error(hidden) == KafkaError.UNKNOWN_TOPIC_OR_PART, "may not even describe it: hidden"
    assert secured.v3("GET", "/acls", headers=secured.headers("mallory", MALLORY_PASSWORD))[0] == 403
    assert (
        len(secured.partitions(TOPIC)) == 1
        and secured.api("GET", f"/topics/{TOPIC}/partitions/0")["log_start_offset"] == 0
    )
    assert not [a for a in secured.api("GET", "/acls")["data"] if a["principal"] == "User:mallory"]


def test_scram_credentials_set_over_the_kafka_door_work_at_both_doors(secured: Cluster) -> None:
    admin = AdminClient(config(secured, ADMIN, ADMIN_PASSWORD))
    carol = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-pw-5"
    )
    weak = UserScramCredentialUpsertion("dave", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"dave-pw")
    answers = admin.alter_user_scram_credentials([carol, weak])
    assert admin_error(answers["carol"]) is None
    assert admin_error(answers["dave"]) == KafkaError.UNSUPPORTED_SASL_MECHANISM
    described = admin.describe_user_scram_credentials(["carol"])
    assert isinstance(described, dict), "named users: a future each"
    infos = described["carol"].result(timeout=TIMEOUT_S).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_512, 8192)]
    wait_until(lambda: statuses_everywhere(secured, "/brokers", "carol", "carol-pw-5") == {200}, "carol everywhere")
    carol_admin = AdminClient({**config(secured, "carol", "carol-pw-5"), "sasl.mechanism": "SCRAM-SHA-512"})
    nodes = carol_admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S).nodes
    assert len(nodes) == len(secured.brokers), "carol signs in with SCRAM-SHA-512"
    mallory = AdminClient(config(secured, "mallory", MALLORY_PASSWORD))
    assert (
        admin_error(mallory.alter_user_scram_credentials([carol])["carol"]) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    )
    deletion = UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)
    assert admin_error(admin.alter_user_scram_credentials([deletion])["carol"]) is None
    wait_until(lambda: statuses_everywhere(secured, "/brokers", "carol", "carol-pw-5") == {401}, "carol gone")
    assert admin_error(admin.alter_user_scram_credentials([deletion])["carol"]) == KafkaError.RESOURCE_NOT_FOUND


def wire(api_key: int, version: int, class_name: str, **fields: object) -> Any:
    """A kio request (or part of one) of ``api_key`` at ``version``, as a Kafka client encodes it."""
    return build(request_class(api_key, version, class_name), **fields)


def test_the_other_admin_apis_refuse_a_user_without_their_acls_on_the_wire(secured: Cluster) -> None:
    """The APIs no Python client speaks, or whose refusal a client hides, asked as mallory (no ACL)."""
    connection = logged_in(secured, "mallory", MALLORY_PASSWORD)
    try:
        quotas = connection.call(describe_quotas())
        assert quotas.error_code == ErrorCode.cluster_authorization_failed and quotas.entries is None
        (altered,) = connection.call(alter_quotas("mallory", [("producer_byte_rate", 1e9, False)])).entries
        assert altered.error_code == ErrorCode.cluster_authorization_failed
        elect = wire(43, 2, "ElectLeadersRequest", election_type=i8(0), topic_partitions=None, timeout=millis(5000))
        assert connection.call(elect).error_code == ErrorCode.cluster_authorization_failed
        log_dirs = connection.call(wire(35, 4, "DescribeLogDirsRequest", topics=None))
        assert (log_dirs.error_code, log_dirs.results) == (ErrorCode.cluster_authorization_failed, ())
        (deleted,) = connection.call(wire(42, 2, "DeleteGroupsRequest", groups_names=("some-group",))).results
        assert deleted.error_code == ErrorCode.group_authorization_failed
        offsets = wire(47, 0, "OffsetDeleteRequest", group_id="some-group", topics=())
        assert connection.call(offsets).error_code == ErrorCode.group_authorization_failed
        topic = wire(75, 0, "TopicRequest", name=TOPIC)
        pages = wire(
            75, 0, "DescribeTopicPartitionsRequest", topics=(topic,), response_partition_limit=i32(100), cursor=None
        )
        (named,) = connection.call(pages).topics
        assert named.error_code == ErrorCode.topic_authorization_failed and named.partitions == ()
        everything = wire(
            75, 0, "DescribeTopicPartitionsRequest", topics=(), response_partition_limit=i32(100), cursor=None
        )
        assert TOPIC not in [t.name for t in connection.call(everything).topics]
        metadata = wire(
            3,
            10,
            "MetadataRequest",
            topics=(),
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=True,
            include_topic_authorized_operations=True,
        )
        assert connection.call(metadata).cluster_authorized_operations == 0, "asked, and none (not -2**31)"
    finally:
        connection.close()
    assert "User:mallory" not in {q["principal"] for q in secured.api("GET", "/quotas")["data"]}


def test_authorized_operations_are_answered_when_asked(secured: Cluster) -> None:
    """Metadata's (what describe_topics asks) and DescribeCluster's bit fields, for alice and for mallory."""
    alice = AdminClient(config(secured, "alice", ALICE_PASSWORD))
    (topic,) = alice.describe_topics(TopicCollection([TOPIC]), include_authorized_operations=True).values()
    assert {op.name for op in topic.result(timeout=TIMEOUT_S).authorized_operations} == {
        "READ",
        "WRITE",
        "CREATE",
        "DELETE",
        "DESCRIBE",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    }, "her ACLs on orders-*, DESCRIBE implied by READ and WRITE, no ALTER"
    described = alice.describe_cluster(include_authorized_operations=True, request_timeout=TIMEOUT_S)
    assert {op.name for op in described.result(timeout=TIMEOUT_S).authorized_operations} == {"DESCRIBE_CONFIGS"}
    mallory = AdminClient(config(secured, "mallory", MALLORY_PASSWORD))
    cluster = mallory.describe_cluster(include_authorized_operations=True, request_timeout=TIMEOUT_S)
    assert not cluster.result(timeout=TIMEOUT_S).authorized_operations, "none (librdkafka reads an empty set as None)"
