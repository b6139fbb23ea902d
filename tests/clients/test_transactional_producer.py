"""The Python producer's transactions (aiokafka's shape) over HTTP, against three real brokers.

Committed records are read by ``read_committed`` consumers and aborted ones never are;
a send outside a transaction is refused; a second producer with the same
transactional id fences the first, whose open transaction is aborted; offsets sent with
a transaction apply only if it commits (consume-transform-produce); the block form
commits or aborts; a librdkafka ``read_committed`` reader agrees over the Kafka door.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from broker.client.errors import IllegalTransactionState
from broker.errors.groups import StaleMemberEpoch
from broker.errors.transactions import ProducerFenced
from consumer import Consumer, TopicPartition
from producer import Producer
from tests.support.cluster import STEADY_SETTINGS, Cluster, ClusterSpec, cluster_fixture
from tests.support.waiting import wait_until, wait_until_async

pytestmark = pytest.mark.integration

INTERNAL_PARTITIONS = 3
cluster = cluster_fixture(
    ClusterSpec(
        brokers=3,
        kafka=True,
        settings={
            **STEADY_SETTINGS,
            "transaction_state_num_partitions": INTERNAL_PARTITIONS,
            "offsets_topic_num_partitions": INTERNAL_PARTITIONS,
        },
    ),
    "module",
)
"""Three brokers, so coordinators and partition leaders are spread out."""


@pytest.fixture
def names(prefix: str) -> Iterator[str]:
    return (f"{prefix}-{number}" for number in itertools.count())


def new_topic(cluster: Cluster, name: str, partitions: int = 2) -> str:
    cluster.create_topic(name, partitions, replication_factor=3, configs={"min.insync.replicas": 2})
    return name


def transactional(cluster: Cluster, transactional_id: str) -> Producer:
    return Producer(cluster.url(), transactional_id=transactional_id, linger_ms=0)


async def read(cluster: Cluster, topic: str, partitions: int, isolation_level: str) -> list[str]:
    """Every value below the HW (``read_committed``: the LSO, once stable), in offset order per partition."""
    cluster.wait_stable(topic)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    ends = [p["high_watermark"] for p in cluster.api("GET", f"/topics/{topic}/partitions")["data"]]
    values: list[str] = []
    async with Consumer(cluster.url(), isolation_level=isolation_level, fetch_max_wait_ms=100) as consumer:
        consumer.assign(tps)
        for tp in tps:
            await consumer.seek_to_beginning(tp)
        async with asyncio.timeout(20):
            while any([await consumer.position(tp) < end for tp, end in zip(tps, ends)]):
                for records in (await consumer.getmany(timeout_ms=200)).values():
                    values.extend(record.value.decode() for record in records if record.value is not None)
    return values


async def test_committed_records_are_read_and_aborted_ones_never(cluster: Cluster, names: Iterator[str]) -> None:
    topic = new_topic(cluster, next(names))
    async with transactional(cluster, next(names)) as producer:
        producer.begin_transaction()
        for i in range(4):
            await producer.send(topic, f"committed-{i}".encode(), partition=i % 2)
        await producer.commit_transaction()
        producer.begin_transaction()
        for i in range(4):
            await producer.send(topic, f"aborted-{i}".encode(), partition=i % 2)
        await producer.abort_transaction()
        async with producer.transaction():
            await producer.send(topic, b"block-committed", partition=0)
        with pytest.raises(RuntimeError, match="inside the block"):
            async with producer.transaction():
                await producer.send(topic, b"block-aborted", partition=1)
                raise RuntimeError("inside the block")
    committed = await read(cluster, topic, 2, "read_committed")
    assert sorted(committed) == sorted([f"committed-{i}" for i in range(4)] + ["block-committed"])
    everything = await read(cluster, topic, 2, "read_uncommitted")
    assert sorted(everything) == sorted(
        [f"committed-{i}" for i in range(4)] + [f"aborted-{i}" for i in range(4)] + ["block-committed", "block-aborted"]
    )
    assert sorted(kafka_read_committed(cluster, topic, 2)) == sorted(committed)


async def test_a_send_outside_a_transaction_is_refused(cluster: Cluster, names: Iterator[str]) -> None:
    topic = new_topic(cluster, next(names), partitions=1)
    async with transactional(cluster, next(names)) as producer:
        with pytest.raises(IllegalTransactionState, match="cannot send"):
            await producer.send(topic, b"outside")
        producer.begin_transaction()
        with pytest.raises(IllegalTransactionState, match="cannot begin"):
            producer.begin_transaction()
        await producer.abort_transaction()
    with pytest.raises(ValueError, match="transactional_id needs enable_idempotence"):
        Producer(cluster.url(), transactional_id="no-idempotence", acks="1")


async def test_a_new_incarnation_fences_the_old_one_and_aborts_its_transaction(
    cluster: Cluster, names: Iterator[str]
) -> None:
    topic = new_topic(cluster, next(names))
    transactional_id = next(names)
    zombie = transactional(cluster, transactional_id)
    await zombie.start()
    zombie.begin_transaction()
    await (await zombie.send(topic, b"zombie", partition=0))
    async with transactional(cluster, transactional_id) as successor:
        with pytest.raises(ProducerFenced):
            await zombie.commit_transaction()
        with pytest.raises(IllegalTransactionState, match="fenced or failed for good"):
            zombie.begin_transaction()
        async with successor.transaction():
            await successor.send(topic, b"successor", partition=1)
    await zombie.close()
    assert await read(cluster, topic, 2, "read_committed") == ["successor"]
    described = cluster.api("GET", f"/transactions/{transactional_id}")
    assert described["state"] == "CompleteCommit"
    assert described["producer_epoch"] > 0, "the successor's epoch must be above the zombie's"


async def test_offsets_sent_with_a_transaction_apply_only_if_it_commits(cluster: Cluster, names: Iterator[str]) -> None:
    source, sink, group = new_topic(cluster, next(names)), new_topic(cluster, next(names)), next(names)
    async with Producer(cluster.url(), linger_ms=0) as plain:
        await asyncio.gather(*[await plain.send(source, f"in-{i}".encode(), partition=i % 2) for i in range(6)])
    async with (
        transactional(cluster, next(names)) as producer,
        Consumer(cluster.url(), group_id=group, isolation_level="read_committed") as consumer,
    ):

        async def committed() -> list[int | None]:
            return [await consumer.committed(TopicPartition(source, p)) for p in range(2)]

        for commit, end in ((False, 2), (True, 3)):
            producer.begin_transaction()
            for i in range(end * 2):
                await producer.send(sink, f"out-{commit}-{i}".encode(), partition=i % 2)
            offsets = {TopicPartition(source, 0): end, TopicPartition(source, 1): end}
            await producer.send_offsets_to_transaction(offsets, group)
            await (producer.commit_transaction() if commit else producer.abort_transaction())
            cluster.wait_stable(sink)
            if not commit:
                assert await committed() == [None, None], "an aborted transaction's offsets were applied"

        async def applied() -> bool:
            return await committed() == [3, 3]

        await wait_until_async(applied, "the committed transaction's offsets applied", 20, 0.1)
    assert sorted(await read(cluster, sink, 2, "read_committed")) == sorted(f"out-True-{i}" for i in range(6))


def kafka_read_committed(cluster: Cluster, topic: str, partitions: int) -> list[str]:
    """The same topic through the Kafka door (librdkafka, ``read_committed``), to its end."""
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": f"kafka-reader-{time.monotonic_ns()}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    values: list[str] = []
    at_end: set[int] = set()
    try:
        consumer.assign([KafkaTopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + 20
        while len(at_end) < partitions and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            error, partition = message.error(), message.partition()
            if error is not None and error.code() == KafkaError._PARTITION_EOF and partition is not None:
                at_end.add(partition)
            elif error is None:
                values.append((message.value() or b"").decode())
    finally:
        consumer.close()
    assert len(at_end) == partitions, f"the Kafka reader reached the end of {sorted(at_end)} only"
    return values


async def test_the_cli_lists_and_describes_transactional_ids(cluster: Cluster) -> None:
    # short names: the tables fit an 80-column terminal without folding a cell
    topic, finished, open_id = new_topic(cluster, "cli-txn"), "cli-done", "cli-open"
    async with transactional(cluster, finished) as producer, producer.transaction():
        await producer.send(topic, b"done", partition=0)
    async with transactional(cluster, open_id) as holder:
        holder.begin_transaction()
        await (await holder.send(topic, b"pending", partition=1))
        listed = await asyncio.to_thread(cluster.cli, ["transactions", "list"])
        rows = {line.split()[0]: line.split() for line in listed.splitlines()[1:] if line.strip()}
        assert rows[finished][3] == "CompleteCommit" and rows[finished][4] == "-"
        assert rows[open_id][3:] == ["Ongoing", rows[open_id][4], "s"] and float(rows[open_id][4]) >= 0
        ongoing = await asyncio.to_thread(cluster.cli, ["transactions", "list", "--state", "Ongoing"])
        assert open_id in ongoing and finished not in ongoing
        described = await asyncio.to_thread(cluster.cli, ["transactions", "describe", open_id])
        assert f"{topic}-1" in described and "Ongoing" in described
        await holder.abort_transaction()

    def aborted() -> list[str]:
        listing = cluster.api("GET", "/transactions?state=CompleteAbort")
        return [t["transactional_id"] for t in listing["data"] if t["transactional_id"] in (finished, open_id)]

    # an abort is answered once it is decided (PrepareAbort); it completes when its markers are written
    assert await asyncio.to_thread(wait_until, aborted, "the aborted transaction complete", 20) == [open_id]


async def test_a_read_committed_groups_lag_ends_at_the_last_stable_offset(
    cluster: Cluster, names: Iterator[str]
) -> None:
    topic = new_topic(cluster, next(names), partitions=1)
    tp = TopicPartition(topic, 0)
    async with transactional(cluster, next(names)) as producer:
        async with producer.transaction():
            for i in range(3):
                await producer.send(topic, b"committed-%d" % i, partition=0)
        await asyncio.to_thread(cluster.wait_stable, topic)
        producer.begin_transaction()  # offsets 0-2 committed, 3 their marker, 4-5 still open
        for i in range(2):
            await (await producer.send(topic, b"open-%d" % i, partition=0))
        for isolation, expected_lag in (("read_committed", 0), ("read_uncommitted", 2)):
            group = next(names)
            async with Consumer(
                cluster.url(), group_id=group, isolation_level=isolation, heartbeat_interval_ms=200
            ) as member:
                member.subscribe([topic])

                async def joined(member: Consumer = member) -> bool:
                    await member.getmany(timeout_ms=100)
                    return tp in member.assignment()

                await wait_until_async(joined, f"{group} to own {topic}-0", 20, 0.05)
                await member.commit({tp: 4})
                lags = await asyncio.to_thread(cluster.api, "GET", f"/consumer-groups/{group}/lags")
                row = next(row for row in lags["data"] if row["topic_name"] == topic)
                figures = (row["lag"], row["isolation_level"], row["last_stable_offset"], row["log_end_offset"])
                assert figures == (expected_lag, isolation, 4, 6), row
        await producer.abort_transaction()


async def test_offsets_of_a_member_fenced_since_are_refused_and_leave_only_abort(
    cluster: Cluster, names: Iterator[str]
) -> None:
    source, sink, group = new_topic(cluster, next(names), partitions=1), new_topic(cluster, next(names)), next(names)
    tp = TopicPartition(source, 0)
    async with Producer(cluster.url(), linger_ms=0) as plain:
        await asyncio.gather(*[await plain.send(source, b"in-%d" % i, partition=0) for i in range(4)])
    async with (
        transactional(cluster, next(names)) as producer,
        Consumer(cluster.url(), group_id=group, isolation_level="read_committed", heartbeat_interval_ms=200) as member,
    ):
        member.subscribe([source])

        async def joined() -> bool:
            await member.getmany(timeout_ms=100)
            return tp in member.assignment()

        await wait_until_async(joined, f"{group} to own {source}-0", 20, 0.05)
        current = member.group_metadata()
        assert (current.group_id, current.member_id) == (group, member.member_id) and current.member_epoch > 0
        async with producer.transaction():
            await producer.send(sink, b"out-1", partition=0)
            await producer.send_offsets_to_transaction({tp: 2}, current)
        producer.begin_transaction()
        await producer.send(sink, b"out-zombie", partition=0)
        with pytest.raises(StaleMemberEpoch):
            await producer.send_offsets_to_transaction({tp: 4}, current._replace(member_epoch=current.member_epoch - 1))
        with pytest.raises(IllegalTransactionState, match="abort it"):
            await producer.commit_transaction()
        await producer.abort_transaction()

        async def applied() -> bool:
            return await member.committed(tp) == 2

        await wait_until_async(applied, "the member's committed offset 2, not the zombie's 4", 20, 0.1)
    assert await read(cluster, sink, 2, "read_committed") == ["out-1"]
