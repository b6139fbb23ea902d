"""Idempotent producers and admin requests from real Kafka clients, and kcat, against a real
3-broker RF 3 cluster through the brokers' Kafka listeners.

kafka-python with its default settings (idempotence on) produces, and the stored
batches carry the producer id the cluster allocated, epoch 0 and gap-free sequences.
confluent-kafka's, kafka-python's and aiokafka's admin clients create (also
validate-only, and with a manual replica assignment), describe, configure-describe and
delete topics, and every broker's HTTP API sees the same topics; aiokafka's idempotent producer (InitProducerId v0)
produces; Debian's kcat lists metadata and round-trips keyed records with headers.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
from contextlib import closing
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer  # type: ignore[import-untyped]
from aiokafka.admin import AIOKafkaAdminClient  # type: ignore[import-untyped]
from aiokafka.admin import NewTopic as AioNewTopic
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource  # type: ignore[import-untyped]
from aiokafka.admin.config_resource import ConfigResourceType as AioConfigResourceType
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic
from kafka import KafkaProducer  # type: ignore[import-untyped]
from kafka.admin import ConfigResource as KafkaPythonConfigResource  # type: ignore[import-untyped]
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KafkaPythonNewTopic
from kafka.errors import InvalidPartitionsError  # type: ignore[import-untyped]
from kio.schema.errors import ErrorCode

from broker.record.codec import RecordInput, encode_batch
from broker.record.header import iter_batches
from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until
from tests.unit.kafka import requests
from tests.unit.kafka.test_kadmin import init_producer_id

pytestmark = pytest.mark.integration

KCAT = shutil.which("kcat")
TIMEOUT_S = 20


def stored_batches(kafka_cluster: Cluster, topic: str, leader: int) -> list:
    """The batch headers the leader stores for partition 0, as a Kafka Fetch returns them."""
    connection = Connection(kafka_cluster.kafka_addresses[leader])
    try:
        [part] = connection.call(requests.fetch(12, topic, 0)).responses[0].partitions
        assert part.error_code == ErrorCode.none
        return list(iter_batches(part.records))
    finally:
        connection.close()


def test_kafka_python_with_default_settings_produces_idempotently(kafka_cluster: Cluster) -> None:
    [description] = kafka_cluster.create_topic("kafka-python-defaults", configs=MIN_ISR_2).values()
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), linger_ms=0)
    try:
        futures = [producer.send("kafka-python-defaults", key=b"k%d" % i, value=b"v%d" % i) for i in range(6)]
        assert [future.get(timeout=TIMEOUT_S).offset for future in futures] == list(range(6))
    finally:
        producer.close()
    batches = stored_batches(kafka_cluster, "kafka-python-defaults", description.leader_id)
    assert {(b.producer_id >= 1000, b.producer_epoch) for b in batches} == {(True, 0)}
    assert len({b.producer_id for b in batches}) == 1
    sequences = [(b.base_sequence, b.base_sequence + b.last_offset_delta) for b in batches]
    assert sequences[0][0] == 0
    assert all(nxt[0] == prev[1] + 1 for prev, nxt in itertools.pairwise(sequences))
    assert sequences[-1][1] == 5


def test_each_idempotent_producer_gets_its_own_id_and_a_transactional_one_keeps_its_id_at_a_new_epoch(
    kafka_cluster: Cluster,
) -> None:
    connection = Connection(kafka_cluster.kafka_addresses[1])
    try:
        first, second = (connection.call(init_producer_id(4)) for _ in range(2))
    finally:
        connection.close()
    assert (first.error_code, first.producer_epoch, second.producer_epoch) == (ErrorCode.none, 0, 0)
    assert second.producer_id > first.producer_id

    def from_its_coordinator() -> list | None:
        answers = []
        for address in kafka_cluster.kafka_addresses.values():
            with closing(Connection(address)) as direct:
                answers.append(direct.call(init_producer_id(4, transactional_id="payments-tx")))
        found = [answer for answer in answers if answer.error_code == ErrorCode.none]
        assert all(a.error_code in (ErrorCode.none, ErrorCode.not_coordinator) for a in answers), answers
        return found or None

    [incarnation] = wait_until(from_its_coordinator, "the transactional id's coordinator answering", TIMEOUT_S)
    [next_incarnation] = from_its_coordinator() or []
    assert next_incarnation.producer_id == incarnation.producer_id > second.producer_id
    assert next_incarnation.producer_epoch == incarnation.producer_epoch + 1


def topic_on_every_broker(kafka_cluster: Cluster, name: str, status: int) -> list[dict]:
    """Each broker's HTTP answer for topic ``name`` once all of them answer ``status``.

    An admin call returns once the broker that ran it sees the change; the others see
    it when their metadata view catches up, so the check waits for every broker.
    """

    def agreed() -> list[dict] | None:
        replies = [kafka_cluster.v3("GET", f"/topics/{name}", via=b, timeout_s=5) for b in kafka_cluster.brokers]
        return [reply for _, reply in replies] if all(got == status for got, _ in replies) else None

    return wait_until(agreed, f"every broker answering {status} for topic {name}", TIMEOUT_S)


def admin_error(future: object) -> KafkaError | None:
    try:
        future.result(timeout=TIMEOUT_S)  # type: ignore[attr-defined]
    except KafkaException as error:
        return error.args[0]
    return None


def test_admin_client_creates_describes_and_deletes_topics(kafka_cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    made = NewTopic("admin-made", num_partitions=3, replication_factor=3, config={"retention.ms": "60000"})
    assert admin_error(admin.create_topics([made])["admin-made"]) is None
    topic, *_ = topic_on_every_broker(kafka_cluster, "admin-made", 200)
    assert (topic["partitions_count"], topic["replication_factor"]) == (3, 3)
    assert {"name": "retention.ms", "value": "60000"} in topic["config_values"]

    dry = NewTopic("admin-dry-run", num_partitions=2, replication_factor=3)
    assert admin_error(admin.create_topics([dry], validate_only=True)["admin-dry-run"]) is None
    topic_on_every_broker(kafka_cluster, "admin-dry-run", 404)

    refusals = {
        "admin-made": (NewTopic("admin-made", 1, 1), KafkaError.TOPIC_ALREADY_EXISTS),
        "admin-rf4": (NewTopic("admin-rf4", 1, 4), KafkaError.INVALID_REPLICATION_FACTOR),
        "admin-badcfg": (NewTopic("admin-badcfg", 1, 3, config={"retention.ms": "soon"}), KafkaError.INVALID_CONFIG),
    }
    for name, (new_topic, code) in refusals.items():
        for validate_only in (True, False):
            error = admin_error(admin.create_topics([new_topic], validate_only=validate_only)[name])
            assert error is not None and error.code() == code, (name, validate_only, error)
    topic_on_every_broker(kafka_cluster, "admin-rf4", 404)
    assert not {"admin-dry-run", "admin-rf4"} & set(admin.list_topics(timeout=TIMEOUT_S).topics)

    resource = ConfigResource(ConfigResource.Type.TOPIC, "admin-made")
    configs = admin.describe_configs([resource])[resource].result(timeout=TIMEOUT_S)
    assert (configs["retention.ms"].value, configs["retention.ms"].source) == (
        "60000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].is_default) == ("delete", True)
    broker = ConfigResource(ConfigResource.Type.BROKER, "2")
    broker_configs = admin.describe_configs([broker])[broker].result(timeout=TIMEOUT_S)
    assert broker_configs["broker.id"].value == "2"
    assert broker_configs["log.retention.ms"].value == configs["retention.ms"].synonyms["log.retention.ms"].value

    cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
    assert cluster.cluster_id == kafka_cluster.cluster_id
    assert {f"{n.host}:{n.port}" for n in cluster.nodes} == set(kafka_cluster.kafka_addresses.values())
    assert cluster.controller.id in kafka_cluster.kafka_addresses

    assert admin_error(admin.delete_topics(["admin-made"])["admin-made"]) is None
    topic_on_every_broker(kafka_cluster, "admin-made", 404)
    gone = admin_error(admin.delete_topics(["admin-made"])["admin-made"])
    assert gone is not None and gone.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_admin_client_creates_a_topic_on_the_replicas_it_assigns(kafka_cluster: Cluster) -> None:
    """Placed, led (first replica) and readable as assigned, through the Kafka door and every broker's HTTP API;
    a refused assignment is INVALID_REPLICA_ASSIGNMENT, validate-only or not, and creates nothing.

    librdkafka wants the partition count beside an assignment but sends -1 for both counts, as Kafka requires.
    """
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
    assignment = [[2, 3], [3, 1]]
    placed = NewTopic("admin-placed", len(assignment), replica_assignment=assignment)
    assert admin_error(admin.create_topics([placed])["admin-placed"]) is None
    topic, *_ = topic_on_every_broker(kafka_cluster, "admin-placed", 200)
    assert (topic["partitions_count"], topic["replication_factor"]) == (2, 2)
    described = admin.list_topics("admin-placed", timeout=TIMEOUT_S).topics["admin-placed"].partitions
    assert {p: (d.replicas, d.leader) for p, d in described.items()} == {0: ([2, 3], 2), 1: ([3, 1], 3)}

    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "acks": "all"})
    for partition in (0, 1):
        producer.produce("admin-placed", value=f"on-{partition}", partition=partition)
    assert producer.flush(TIMEOUT_S) == 0
    for partition, replicas in enumerate(assignment):
        for broker_id in replicas:
            read = f"/topics/admin-placed/partitions/{partition}/records?offset=0&format=string"
            wait_until(
                lambda path=read, b=broker_id, p=partition: (  # type: ignore[misc]
                    [r["value"]["data"] for r in kafka_cluster.v3("GET", path, via=b)[1]["data"]] == [f"on-{p}"]
                ),
                f"broker {broker_id} to serve partition {partition}'s record",
                TIMEOUT_S,
            )

    refusals = {"admin-unknown-broker": [[1, 4]], "admin-uneven": [[1, 2], [3]], "admin-twice": [[2, 2]]}
    for name, refused in refusals.items():
        for validate_only in (True, False):
            new_topic = NewTopic(name, len(refused), replica_assignment=refused)
            error = admin_error(admin.create_topics([new_topic], validate_only=validate_only)[name])
            assert error is not None and error.code() == KafkaError.INVALID_REPLICA_ASSIGNMENT, (name, error)
        topic_on_every_broker(kafka_cluster, name, 404)


def test_kafka_python_admin_client_creates_describes_and_deletes(kafka_cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())
    try:
        admin.create_topics([KafkaPythonNewTopic("kp-admin", 2, 3, topic_configs={"cleanup.policy": "compact"})])
        with pytest.raises(InvalidPartitionsError):
            admin.create_topics([KafkaPythonNewTopic("kp-admin-none", 0, 3)])
        topic, *_ = topic_on_every_broker(kafka_cluster, "kp-admin", 200)
        assert {"name": "cleanup.policy", "value": "compact"} in topic["config_values"]
        assert "kp-admin" in admin.list_topics()
        modified = admin.describe_configs([KafkaPythonConfigResource("TOPIC", "kp-admin")])["topic"]["kp-admin"]
        assert {name: c["value"] for name, c in modified.items()} == {"cleanup.policy": "compact"}
        cluster = admin.describe_cluster()
        assert (cluster["cluster_id"], cluster["controller_id"] in kafka_cluster.kafka_addresses) == (
            kafka_cluster.cluster_id,
            True,
        )
        assert {f"{b['host']}:{b['port']}" for b in cluster["brokers"]} == set(kafka_cluster.kafka_addresses.values())
        admin.delete_topics(["kp-admin"])
        topic_on_every_broker(kafka_cluster, "kp-admin", 404)
    finally:
        admin.close()


def kcat(kafka_cluster: Cluster, *args: str, stdin: str | None = None) -> str:
    assert KCAT is not None, "kcat is missing: `make test` installs Debian's kcat"
    done = subprocess.run(
        [KCAT, "-b", kafka_cluster.bootstrap(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kcat_lists_metadata_and_round_trips_keys_and_headers(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("kcat-topic", partitions=2, configs=MIN_ISR_2)

    def listed() -> tuple[dict, dict] | None:
        """kcat asks one broker; a broker's metadata view lists a new topic shortly after the creating one's."""
        metadata = json.loads(kcat(kafka_cluster, "-L", "-J"))
        topics = [t for t in metadata["topics"] if t["topic"] == "kcat-topic" and not t.get("error")]
        return (metadata, topics[0]) if topics else None

    metadata, topic = wait_until(listed, "kcat -L listing kcat-topic", TIMEOUT_S)
    assert {f"{b['name']}" for b in metadata["brokers"]} == set(kafka_cluster.kafka_addresses.values())
    assert sorted(p["partition"] for p in topic["partitions"]) == [0, 1]

    lines = "".join(f"key-{i}:value-{i}\n" for i in range(5))
    kcat(kafka_cluster, "-P", "-t", "kcat-topic", "-p", "0", "-K", ":", "-H", "origin=kcat", "-H", "n=1", stdin=lines)
    kcat(
        kafka_cluster, "-P", "-t", "kcat-topic", "-p", "0", "-K", ":", "-X", "enable.idempotence=true", stdin="idem:1\n"
    )
    consumed = kcat(kafka_cluster, "-C", "-t", "kcat-topic", "-p", "0", "-o", "beginning", "-e", "-J")
    messages = [json.loads(line) for line in consumed.splitlines() if line.strip()]
    assert [(m["offset"], m["key"], m["payload"]) for m in messages] == [
        *((i, f"key-{i}", f"value-{i}") for i in range(5)),
        (5, "idem", "1"),
    ]
    assert messages[0]["headers"] == ["origin", "kcat", "n", "1"]
    wait_until(
        lambda: kafka_cluster.v3("GET", "/topics/kcat-topic/partitions/0/offset")[1]["latest_offset"] == 6,
        "HW 6",
        TIMEOUT_S,
    )


def test_aiokafka_idempotent_producer_and_admin_client(kafka_cluster: Cluster) -> None:
    async def scenario() -> tuple[list[int], Any]:
        admin = AIOKafkaAdminClient(bootstrap_servers=kafka_cluster.bootstrap())
        await admin.start()
        try:
            await admin.create_topics([AioNewTopic("aiokafka-made", 1, 3, topic_configs={"retention.ms": "90000"})])
            topic_on_every_broker(kafka_cluster, "aiokafka-made", 200)
            producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap(), enable_idempotence=True)
            await producer.start()
            try:
                offsets = [
                    (await producer.send_and_wait("aiokafka-made", b"v%d" % i, partition=0)).offset for i in range(3)
                ]
            finally:
                await producer.stop()
            [described] = await admin.describe_configs(
                [AioConfigResource(AioConfigResourceType.TOPIC, "aiokafka-made")]
            )
            await admin.delete_topics(["aiokafka-made"])
            return offsets, described
        finally:
            await admin.close()

    offsets, described = asyncio.run(scenario())
    assert offsets == [0, 1, 2]
    [(_, _, _, _, configs)] = described.resources
    assert ("retention.ms", "90000") in {(c[0], c[1]) for c in configs}
    topic_on_every_broker(kafka_cluster, "aiokafka-made", 404)


def test_a_retried_idempotent_batch_over_kafka_gets_its_original_offset_and_a_gap_is_refused(
    kafka_cluster: Cluster,
) -> None:
    """The Produce path keeps Kafka's idempotence: what a producer whose acknowledgement was lost sends again."""
    [description] = kafka_cluster.create_topic("kafka-retries", configs=MIN_ISR_2).values()
    connection = Connection(kafka_cluster.kafka_addresses[description.leader_id])
    try:
        producer_id = connection.call(init_producer_id(4)).producer_id

        def produce(base_sequence: int, values: list[bytes]) -> tuple[ErrorCode, int]:
            batch = encode_batch(
                [RecordInput(None, v) for v in values],
                producer_id=producer_id,
                producer_epoch=0,
                base_sequence=base_sequence,
            )
            [part] = connection.call(requests.produce(9, "kafka-retries", batch)).responses[0].partition_responses
            return part.error_code, part.base_offset

        assert produce(0, [b"a", b"b"]) == (ErrorCode.none, 0)
        assert produce(2, [b"c"]) == (ErrorCode.none, 2)
        assert produce(0, [b"a", b"b"]) == (ErrorCode.none, 0), "a retry is answered with its original offset"
        assert produce(5, [b"gap"])[0] == ErrorCode.out_of_order_sequence_number
    finally:
        connection.close()
    batches = stored_batches(kafka_cluster, "kafka-retries", description.leader_id)
    assert [(b.base_offset, b.base_sequence) for b in batches] == [(0, 0), (2, 2)]
