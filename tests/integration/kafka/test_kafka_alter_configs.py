"""Topic configs altered through the Kafka listener, with real clients, on a real 3-broker RF 3 cluster.

confluent-kafka's ``incremental_alter_configs`` sets ``retention.ms`` and
``max.message.bytes`` through broker 1; DescribeConfigs through broker 2 and the HTTP
API through broker 3 see them, and the new ``max.message.bytes`` holds: a larger record
is refused to a Kafka producer until a DELETE resets it. ``validate_only`` changes
nothing; a bad value is that resource's ``INVALID_CONFIG`` while the other resource of
the request is altered. The legacy ``alter_configs`` replaces the whole override set,
and kafka-python's admin client, which alters only configs DescribeConfigs reports as
not read-only, alters a topic config and is refused a broker's. The broker resource with
the empty name sets a cluster-wide default (``num.partitions``) that a topic created
with the default count takes, and a DELETE resets it.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic
from kafka.admin import ConfigResource as KafkaPythonConfigResource  # type: ignore[import-untyped]
from kafka.admin import KafkaAdminClient
from kio.schema.errors import ErrorCode

from broker.kafka.alter_configs import OpType
from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.test_kadmin_clients import TIMEOUT_S, admin_error
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until
from tests.unit.kafka.test_kadmin import describe_configs
from tests.unit.kafka.test_kalter_configs import incremental_alter

pytestmark = pytest.mark.integration

TOPIC_TYPE, BROKER_TYPE = 2, 4
BIG_RECORD = b"x" * 4096


def incremental(topic: str, **ops: tuple[AlterConfigOpType, str | None]) -> ConfigResource:
    """A topic resource of ``name=(operation, value)`` entries; ``_`` in a keyword is ``.`` in the config name."""
    entries = [
        ConfigEntry(name.replace("_", "."), value, incremental_operation=op) for name, (op, value) in ops.items()
    ]
    return ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)


def http_overrides(kafka_cluster: Cluster, broker_id: int, topic: str) -> dict[str, str]:
    """The configs ``topic``'s record holds (source DYNAMIC_TOPIC_CONFIG), as broker ``broker_id``'s HTTP API lists them."""
    status, body = kafka_cluster.v3("GET", f"/topics/{topic}/configs", via=broker_id, timeout_s=5)
    assert status == 200, body
    return {c["name"]: c["value"] for c in body["data"] if c["source"] == "DYNAMIC_TOPIC_CONFIG"}


def everywhere(kafka_cluster: Cluster, topic: str, overrides: dict[str, str]) -> None:
    """Wait until every broker's HTTP API lists exactly ``overrides`` for ``topic`` (views catch up on their own)."""
    wait_until(
        lambda: all(http_overrides(kafka_cluster, b, topic) == overrides for b in kafka_cluster.brokers),
        f"every broker listing {overrides} for {topic}",
        TIMEOUT_S,
    )


def described_through(kafka_cluster: Cluster, broker_id: int, topic: str) -> dict[str, tuple[str, int, bool]]:
    """Name -> (value, source, read_only) as broker ``broker_id`` answers DescribeConfigs v4 for ``topic``."""
    connection = Connection(kafka_cluster.kafka_addresses[broker_id])
    try:
        [result] = connection.call(describe_configs(4, [(TOPIC_TYPE, topic, None)])).results
    finally:
        connection.close()
    assert result.error_code == ErrorCode.none
    return {c.name: (c.value, c.config_source, c.read_only) for c in result.configs}


def produce_one(kafka_cluster: Cluster, topic: str, value: bytes) -> KafkaError | None:
    """The delivery error of one record produced with acks=all by a Kafka producer (None: delivered)."""
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "linger.ms": 0, "acks": "all"})
    delivered: list[KafkaError | None] = []
    producer.produce(topic, value=value, partition=0, on_delivery=lambda error, _: delivered.append(error))
    producer.flush(TIMEOUT_S)
    assert len(delivered) == 1
    return delivered[0]


def test_incremental_alter_through_one_broker_is_seen_through_the_others_and_holds(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("altered", configs=MIN_ISR_2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap(1)})
    SET, DELETE = AlterConfigOpType.SET, AlterConfigOpType.DELETE
    resource = incremental("altered", retention_ms=(SET, "3600000"), max_message_bytes=(SET, "2048"))
    assert admin_error(admin.incremental_alter_configs([resource], broker=1)[resource]) is None

    altered = {"min.insync.replicas": "2", "retention.ms": "3600000", "max.message.bytes": "2048"}
    everywhere(kafka_cluster, "altered", altered)
    described = described_through(kafka_cluster, 2, "altered")
    dynamic = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert described["retention.ms"] == ("3600000", dynamic, False)
    assert described["max.message.bytes"] == ("2048", dynamic, False)
    refused = produce_one(kafka_cluster, "altered", BIG_RECORD)
    assert refused is not None and refused.code() == KafkaError.MSG_SIZE_TOO_LARGE, refused
    assert produce_one(kafka_cluster, "altered", b"small") is None

    reset = incremental("altered", max_message_bytes=(DELETE, None))
    assert admin_error(admin.incremental_alter_configs([reset])[reset]) is None
    everywhere(kafka_cluster, "altered", {"min.insync.replicas": "2", "retention.ms": "3600000"})
    assert described_through(kafka_cluster, 3, "altered")["max.message.bytes"][1] == ConfigSource.DEFAULT_CONFIG.value
    assert produce_one(kafka_cluster, "altered", BIG_RECORD) is None


def test_validate_only_and_a_bad_value_change_nothing_and_the_other_resource_is_altered(
    kafka_cluster: Cluster,
) -> None:
    kafka_cluster.create_topic("checked", configs=MIN_ISR_2)
    kafka_cluster.create_topic("checked-too", configs=MIN_ISR_2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    SET = AlterConfigOpType.SET
    dry = incremental("checked", retention_ms=(SET, "1000"))
    assert admin_error(admin.incremental_alter_configs([dry], validate_only=True)[dry]) is None
    bad = incremental("checked", retention_ms=(SET, "soon"), segment_ms=(SET, "60000"))
    good = incremental("checked-too", segment_ms=(SET, "60000"))
    answers = admin.incremental_alter_configs([bad, good])
    error = admin_error(answers[bad])
    assert error is not None and error.code() == KafkaError.INVALID_CONFIG, error
    assert "retention.ms" in error.str()
    assert admin_error(answers[good]) is None
    everywhere(kafka_cluster, "checked-too", {"min.insync.replicas": "2", "segment.ms": "60000"})
    everywhere(kafka_cluster, "checked", {"min.insync.replicas": "2"})


@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_the_legacy_alter_replaces_the_override_set(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("replaced", configs=MIN_ISR_2)
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    resource = ConfigResource(ConfigResource.Type.TOPIC, "replaced", set_config={"segment.ms": "60000"})
    assert admin_error(admin.alter_configs([resource])[resource]) is None
    everywhere(kafka_cluster, "replaced", {"segment.ms": "60000"})
    assert described_through(kafka_cluster, 2, "replaced")["min.insync.replicas"][:2] == (
        "1",
        ConfigSource.DEFAULT_CONFIG.value,
    )


def test_kafka_python_alters_a_topic_config_and_is_refused_a_brokers(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("kp-altered", configs=MIN_ISR_2)
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())
    try:
        answer = admin.alter_configs(
            [KafkaPythonConfigResource("TOPIC", "kp-altered", configs={"retention.ms": "7200000"})]
        )
        assert answer == {"topic": {"kp-altered": "OK"}}
        everywhere(kafka_cluster, "kp-altered", {"min.insync.replicas": "2", "retention.ms": "7200000"})
        broker = KafkaPythonConfigResource("BROKER", "1", configs={"log.retention.ms": "1000"})
        refused = admin.alter_configs([broker], raise_on_unknown=False)
        assert "InvalidConfigurationError" in refused["broker"]["1"] and "read-only" in refused["broker"]["1"]
    finally:
        admin.close()


def alter_through(kafka_cluster: Cluster, broker_id: int, entries: list[tuple[str, int, str | None]]) -> Any:
    """IncrementalAlterConfigs v1 of the broker resource with the empty name, sent on the wire to
    ``broker_id`` (confluent-kafka refuses an empty resource name before sending it)."""
    connection = Connection(kafka_cluster.kafka_addresses[broker_id])
    try:
        [result] = connection.call(incremental_alter(1, [(BROKER_TYPE, "", entries)])).responses
    finally:
        connection.close()
    return result


def test_the_empty_broker_name_sets_a_cluster_wide_default_that_new_topics_take(kafka_cluster: Cluster) -> None:
    """Kafka's ``--entity-default`` broker resource: its alter is the HTTP ``/broker-configs`` one."""
    result = alter_through(kafka_cluster, 2, [("num.partitions", OpType.SET, "4")])
    assert (result.error_code, result.error_message) == (ErrorCode.none, None)
    try:
        for broker_id in kafka_cluster.brokers:
            wait_until(
                lambda b=broker_id: (  # type: ignore[misc]
                    kafka_cluster.v3("GET", "/broker-configs/num.partitions", via=b, timeout_s=5)[0] == 200
                ),
                f"broker {broker_id} to apply num.partitions=4",
                TIMEOUT_S,
            )
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap(3)})
        created = admin.create_topics([NewTopic("counted-by-default", num_partitions=-1, replication_factor=3)])
        assert admin_error(created["counted-by-default"]) is None
        listed = admin.list_topics("counted-by-default", timeout=TIMEOUT_S).topics["counted-by-default"]
        assert len(listed.partitions) == 4
        refused = alter_through(kafka_cluster, 1, [("num.partitions", OpType.SET, "none")])
        assert refused.error_code == ErrorCode.invalid_config and "num.partitions" in refused.error_message
    finally:
        reset = alter_through(kafka_cluster, 1, [("num.partitions", OpType.DELETE, None)])
        assert reset.error_code == ErrorCode.none
