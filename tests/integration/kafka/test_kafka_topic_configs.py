"""A topic's configs are the same through both doors, ``compression.type`` included, with real clients.

confluent-kafka's admin client creates a topic with ``compression.type=zstd`` and
describes it, and describes one the HTTP API created with ``compression.type=gzip``;
every config it is told (name, value, source) is the one the HTTP API lists for that
topic. CreateTopics at the newest version (v5+ answers the new topic's configs) with
``compression.type`` is answered with it among them, the topic created.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from kio.schema.errors import ErrorCode

from tests.integration.kafka.test_kadmin_clients import TIMEOUT_S, admin_error, topic_on_every_broker
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster
from tests.unit.kafka.test_kadmin import CREATE_TOPICS, create_topics, versions

pytestmark = pytest.mark.integration


def http_configs(kafka_cluster: Cluster, topic: str) -> dict[str, tuple[str, int]]:
    """Name -> (value, Kafka's source number) as the HTTP API lists the topic's configs."""
    body = kafka_cluster.api("GET", f"/topics/{topic}/configs")
    return {c["name"]: (c["value"], ConfigSource[c["source"]].value) for c in body["data"]}


def kafka_configs(admin: AdminClient, topic: str) -> dict[str, tuple[str, int]]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)
    return {name: (entry.value, entry.source) for name, entry in described.items()}


def test_both_doors_list_the_same_configs_of_a_topic_with_a_compression_type(kafka_cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    made = NewTopic("zstd-made", num_partitions=1, replication_factor=3, config={"compression.type": "zstd"})
    assert admin_error(admin.create_topics([made])["zstd-made"]) is None
    topic_on_every_broker(kafka_cluster, "zstd-made", 200)
    described = kafka_configs(admin, "zstd-made")
    assert described["compression.type"] == ("zstd", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert described == http_configs(kafka_cluster, "zstd-made")

    kafka_cluster.create_topic("gzip-made", configs={"compression.type": "gzip"})
    topic_on_every_broker(kafka_cluster, "gzip-made", 200)
    described = kafka_configs(admin, "gzip-made")
    assert described["compression.type"] == ("gzip", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert described == http_configs(kafka_cluster, "gzip-made")


def test_create_topics_at_the_newest_version_answers_the_compression_type(kafka_cluster: Cluster) -> None:
    version = versions(CREATE_TOPICS)[-1]
    assert version >= 5
    connection = Connection(kafka_cluster.kafka_addresses[1])
    try:
        request = create_topics(version, [("zstd-wire", 1, 3, {"compression.type": "zstd"})])
        [result] = connection.call(request).topics
    finally:
        connection.close()
    assert (result.error_code, result.error_message) == (ErrorCode.none, None)
    answered = {c.name: (c.value, c.config_source) for c in result.configs}
    assert answered["compression.type"] == ("zstd", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    topic_on_every_broker(kafka_cluster, "zstd-wire", 200)
    assert answered == http_configs(kafka_cluster, "zstd-wire")
