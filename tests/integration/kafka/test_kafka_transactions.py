"""Transactions through the Kafka door with librdkafka (confluent-kafka), on a real 3-broker RF 3 cluster.

A transactional producer commits and aborts; a ``read_committed`` consumer sees exactly
the committed records and a ``read_uncommitted`` one everything; an open transaction
holds ``read_committed`` readers at its first offset; a second incarnation of the same
transactional id fences the first, whose commit then fails and whose open transaction
is aborted.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32

from broker.client.types import TopicPartition as HwTopicPartition
from consumer import Consumer as HwConsumer
from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.test_kafka_groups import call_once
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until
from tests.unit.kafka.requests import request_class

pytestmark = pytest.mark.integration


def producer(cluster: Cluster, transactional_id: str) -> Producer:
    made = Producer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
            "linger.ms": 0,
        }
    )
    made.init_transactions(30)
    return made


def read_all(cluster: Cluster, topic: str, partitions: int, isolation: str, timeout_s: float = 10) -> list[str]:
    """Every value below the reader's bound, from offset 0, in offset order per partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": f"reader-{topic}-{isolation}-{time.monotonic_ns()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([CkTopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[str] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error, partition, value = message.error(), message.partition(), message.value()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF and partition is not None:
                    at_end.add(partition)  # this partition's bound is reached
                    continue
                raise KafkaException(error)
            assert value is not None
            values.append(value.decode())
        assert len(at_end) == partitions, "every partition reached its end"
        return values
    finally:
        consumer.close()


def test_committed_records_are_read_and_aborted_ones_are_not(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-outcomes", partitions=2, configs=MIN_ISR_2)
    writer = producer(kafka_cluster, "txn-outcomes-writer")
    writer.begin_transaction()
    for i in range(4):
        writer.produce("txn-outcomes", f"committed-{i}".encode(), partition=i % 2)
    writer.commit_transaction(30)
    writer.begin_transaction()
    for i in range(4):
        writer.produce("txn-outcomes", f"aborted-{i}".encode(), partition=i % 2)
    writer.flush(30)
    writer.abort_transaction(30)
    writer.begin_transaction()
    writer.produce("txn-outcomes", b"committed-last", partition=0)
    writer.commit_transaction(30)
    kafka_cluster.wait_stable("txn-outcomes")

    committed = read_all(kafka_cluster, "txn-outcomes", 2, "read_committed")
    assert sorted(committed) == ["committed-0", "committed-1", "committed-2", "committed-3", "committed-last"]
    uncommitted = read_all(kafka_cluster, "txn-outcomes", 2, "read_uncommitted")
    assert sorted(uncommitted) == sorted([*committed, "aborted-0", "aborted-1", "aborted-2", "aborted-3"])


def test_an_open_transaction_holds_read_committed_readers_at_its_start(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-open", configs=MIN_ISR_2)
    plain = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "acks": "all"})
    plain.produce("txn-open", b"before", partition=0)
    plain.flush(30)
    writer = producer(kafka_cluster, "txn-open-writer")
    writer.begin_transaction()
    writer.produce("txn-open", b"inside", partition=0)
    writer.flush(30)
    plain.produce("txn-open", b"after", partition=0)
    plain.flush(30)
    assert read_all(kafka_cluster, "txn-open", 1, "read_committed") == ["before"]
    assert read_all(kafka_cluster, "txn-open", 1, "read_uncommitted") == ["before", "inside", "after"]
    writer.commit_transaction(30)
    kafka_cluster.wait_stable("txn-open")
    assert read_all(kafka_cluster, "txn-open", 1, "read_committed") == ["before", "inside", "after"]


def test_a_new_incarnation_fences_the_old_one_and_aborts_its_open_transaction(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-zombie", configs=MIN_ISR_2)
    zombie = producer(kafka_cluster, "txn-zombie-writer")
    zombie.begin_transaction()
    zombie.produce("txn-zombie", b"from-the-zombie", partition=0)
    zombie.flush(30)
    successor = producer(kafka_cluster, "txn-zombie-writer")
    with pytest.raises(KafkaException) as refused:
        zombie.commit_transaction(30)
    assert refused.value.args[0].fatal(), refused.value.args[0]
    successor.begin_transaction()
    successor.produce("txn-zombie", b"from-the-successor", partition=0)
    successor.commit_transaction(30)
    kafka_cluster.wait_stable("txn-zombie")
    assert read_all(kafka_cluster, "txn-zombie", 1, "read_committed") == ["from-the-successor"]


def test_a_transaction_left_open_past_its_timeout_is_aborted_and_its_producer_fenced(kafka_cluster: Cluster) -> None:
    kafka_cluster.create_topic("txn-abandoned", configs=MIN_ISR_2)
    abandoned = Producer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap(),
            "transactional.id": "txn-abandoned-writer",
            "transaction.timeout.ms": 2_000,
            "linger.ms": 0,
        }
    )
    abandoned.init_transactions(30)
    abandoned.begin_transaction()
    abandoned.produce("txn-abandoned", b"never-committed", partition=0)
    abandoned.flush(30)
    plain = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "acks": "all"})
    plain.produce("txn-abandoned", b"after", partition=0)
    plain.flush(30)

    def stable() -> list[str] | None:
        values = read_all(kafka_cluster, "txn-abandoned", 1, "read_committed", timeout_s=5)
        return values if values else None

    assert wait_until(stable, "the coordinator aborting the abandoned transaction", 30) == ["after"]
    with pytest.raises(KafkaException):
        abandoned.commit_transaction(10)


def test_consume_transform_produce_commits_its_input_offsets_with_its_output(kafka_cluster: Cluster) -> None:
    """``send_offsets_to_transaction``: the group's offsets move with a commit, and stay put with an abort."""
    kafka_cluster.create_topic("ctp-in", configs=MIN_ISR_2)
    kafka_cluster.create_topic("ctp-out", configs=MIN_ISR_2)
    plain = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "acks": "all"})
    for i in range(10):
        plain.produce("ctp-in", f"in-{i}".encode(), partition=0)
    plain.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap(),
            "group.id": "ctp-group",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    writer = producer(kafka_cluster, "ctp-writer")
    try:
        consumer.subscribe(["ctp-in"])

        def transform(count: int, *, commit: bool) -> None:
            taken: list[Message] = []
            deadline = time.monotonic() + 30
            while len(taken) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    taken.append(message)
            assert len(taken) == count
            writer.begin_transaction()
            for message in taken:
                value = message.value()
                assert value is not None
                writer.produce("ctp-out", value.replace(b"in-", b"out-"), partition=0)
            writer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
            )
            if commit:
                writer.commit_transaction(30)
            else:
                writer.abort_transaction(30)

        transform(6, commit=True)
        assert [tp.offset for tp in consumer.committed([CkTopicPartition("ctp-in", 0)], 30)] == [6]
        transform(4, commit=False)
        assert [tp.offset for tp in consumer.committed([CkTopicPartition("ctp-in", 0)], 30)] == [6], "aborted"
    finally:
        consumer.close()
    kafka_cluster.wait_stable("ctp-out")
    assert read_all(kafka_cluster, "ctp-out", 1, "read_committed") == [f"out-{i}" for i in range(6)]
    lags = kafka_cluster.api("GET", "/consumer-groups/ctp-group/lags")
    assert [(row["current_offset"], row["log_end_offset"]) for row in lags["data"]] == [(6, 10)]


def test_admin_apis_list_and_describe_an_open_transaction_and_its_producer(kafka_cluster: Cluster) -> None:
    """ListTransactions (every broker), DescribeTransactions (the coordinator), DescribeProducers (the leader)."""
    kafka_cluster.create_topic("txn-described", configs=MIN_ISR_2)
    plain = Producer({"bootstrap.servers": kafka_cluster.bootstrap(), "acks": "all"})
    plain.produce("txn-described", b"before", partition=0)
    plain.flush(30)
    writer = producer(kafka_cluster, "txn-described-writer")
    writer.begin_transaction()
    writer.produce("txn-described", b"inside", partition=0)
    writer.flush(30)

    listed = [
        state
        for address in kafka_cluster.kafka_addresses.values()
        for state in call_once(address, request_class(66, 1, "ListTransactionsRequest")()).transaction_states
        if state.transactional_id == "txn-described-writer"
    ]
    assert [state.transaction_state for state in listed] == ["Ongoing"], "one coordinator lists it"
    describe = request_class(65, 0, "DescribeTransactionsRequest")(transactional_ids=("txn-described-writer",))
    answers = [call_once(address, describe).transaction_states[0] for address in kafka_cluster.kafka_addresses.values()]
    [described] = [answer for answer in answers if answer.error_code == ErrorCode.none]
    assert {answer.error_code for answer in answers} == {ErrorCode.none, ErrorCode.not_coordinator}
    assert (described.producer_id, described.transaction_state) == (listed[0].producer_id, "Ongoing")
    assert [(topic.topic, list(topic.partitions)) for topic in described.topics] == [("txn-described", [0])]

    leader = kafka_cluster.partitions("txn-described")[0].leader_id
    ask = request_class(61, 0, "DescribeProducersRequest")(
        topics=(request_class(61, 0, "TopicRequest")(name="txn-described", partition_indexes=(i32(0),)),)
    )
    [partition] = call_once(kafka_cluster.kafka_addresses[leader], ask).topics[0].partitions
    assert partition.error_code == ErrorCode.none
    [active] = [p for p in partition.active_producers if p.producer_id == described.producer_id]
    assert active.current_txn_start_offset == 1
    writer.commit_transaction(30)

    def marker_written() -> bool:
        """The commit returns once the outcome is durable; the marker reaches the partition after it."""
        [partition] = call_once(kafka_cluster.kafka_addresses[leader], ask).topics[0].partitions
        [active] = [p for p in partition.active_producers if p.producer_id == described.producer_id]
        return active.current_txn_start_offset == -1

    wait_until(marker_written, "the COMMIT marker in the partition", 30)


async def test_the_python_consumer_reads_committed_records_only(kafka_cluster: Cluster) -> None:
    """highwater's own consumer with ``isolation_level="read_committed"``, over HTTP, after librdkafka's transactions."""
    kafka_cluster.create_topic("txn-python-reader", configs=MIN_ISR_2)
    writer = producer(kafka_cluster, "txn-python-reader-writer")
    for outcome, values in (("commit", ["c0", "c1"]), ("abort", ["a0"]), ("commit", ["c2"]), ("open", ["o0"])):
        writer.begin_transaction()
        for value in values:
            writer.produce("txn-python-reader", value.encode(), partition=0)
        writer.flush(30)
        if outcome == "commit":
            writer.commit_transaction(30)
        elif outcome == "abort":
            writer.abort_transaction(30)
    tp = HwTopicPartition("txn-python-reader", 0)
    seen: dict[str, list[bytes | None]] = {}
    for isolation in ("read_committed", "read_uncommitted"):
        async with HwConsumer(kafka_cluster.url(), auto_offset_reset="earliest", isolation_level=isolation) as reader:
            reader.assign([tp])
            records: list[bytes | None] = []
            async with asyncio.timeout(20):
                while len(records) < (3 if isolation == "read_committed" else 5):
                    batch = (await reader.getmany(timeout_ms=500)).get(tp, [])
                    records += [record.value for record in batch]
            assert await reader.getmany(timeout_ms=300) == {}
            seen[isolation] = records
            if isolation == "read_committed":
                await reader.seek_to_end(tp)
                assert await reader.position(tp) == 7, "latest is the open transaction's first offset"
    assert seen["read_committed"] == [b"c0", b"c1", b"c2"]
    assert seen["read_uncommitted"] == [b"c0", b"c1", b"a0", b"c2", b"o0"]
    writer.abort_transaction(30)
