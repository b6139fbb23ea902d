"""Consumer groups through the library against three real brokers: subscribe, split, take over,
commit, resume after a restart, auto-commit, pattern subscriptions, the sync facade."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator

import pytest

from consumer import Consumer, ConsumerRecord, SyncConsumer, TopicPartition
from producer import Producer
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

OFFSETS_PARTITIONS = 5
GROUP_SETTINGS = {
    "auto_offset_reset": "earliest",
    "session_timeout_ms": 2000,
    "heartbeat_interval_ms": 500,
    "fetch_max_wait_ms": 200,
}

cluster = cluster_fixture(
    ClusterSpec(brokers=3, settings={"offsets_topic_num_partitions": OFFSETS_PARTITIONS}), "module"
)
"""Three brokers, so the group coordinator and the partitions the members read are spread out."""

NewTopic = Callable[..., str]


@pytest.fixture
def names(prefix: str) -> Iterator[str]:
    """Topic and group names of this test: ``<prefix>-0``, ``<prefix>-1``..."""
    return (f"{prefix}-{number}" for number in itertools.count())


@pytest.fixture
def new_topic(cluster: Cluster, names: Iterator[str]) -> NewTopic:
    """``new_topic(partitions, name=None)``: a topic of replication factor 2, named after the test unless named."""

    def create(partitions: int, name: str | None = None) -> str:
        topic = name or next(names)
        cluster.create_topic(topic, partitions, replication_factor=2)
        return topic

    return create


async def produce(url: str, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    async with Producer(url, acks="all", linger_ms=0) as producer:
        futures = [
            await producer.send(topic, f"{p}:{i}".encode(), partition=p)
            for i in range(start, start + per_partition)
            for p in range(partitions)
        ]
        await asyncio.gather(*futures)


async def wait_for(condition: Callable[[], object], what: str, timeout_s: float) -> None:
    """``wait_until`` in a worker thread, so the consumers' tasks on this loop go on meanwhile."""
    await asyncio.to_thread(wait_until, condition, what, timeout_s)


async def read(consumer: Consumer, count: int, timeout_s: float = 15.0) -> list[ConsumerRecord]:
    records: list[ConsumerRecord] = []
    async with asyncio.timeout(timeout_s):
        while len(records) < count:
            batches = await consumer.getmany(timeout_ms=200, max_records=count - len(records))
            for partition_records in batches.values():
                records.extend(partition_records)
    return records


def keys(records: list[ConsumerRecord]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


def all_partitions(topic: str, count: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in range(count)}


async def test_two_members_split_a_topic_and_the_survivor_takes_over(
    url: str, new_topic: NewTopic, names: Iterator[str]
) -> None:
    topic, group = new_topic(6), next(names)
    first = Consumer(url, group_id=group, auto_commit_interval_ms=300, **GROUP_SETTINGS)
    second = Consumer(url, group_id=group, auto_commit_interval_ms=300, **GROUP_SETTINGS)
    async with first:
        first.subscribe([topic])
        await wait_for(lambda: first.assignment() == all_partitions(topic, 6), "the first member's assignment", 15)
        await second.start()
        second.subscribe([topic])
        await wait_for(lambda: len(first.assignment()) == 3 and len(second.assignment()) == 3, "an even split", 15)
        assert first.assignment() | second.assignment() == all_partitions(topic, 6)

        await produce(url, topic, 6, 10)
        first_read, second_read = await asyncio.gather(read(first, 30), read(second, 30))
        assert {r.partition for r in first_read}.isdisjoint({r.partition for r in second_read})
        assert {(tp.topic, tp.partition) for tp in first.assignment()} == {(topic, r.partition) for r in first_read}
        assert sorted(keys(first_read) + keys(second_read)) == sorted((p, o) for p in range(6) for o in range(10))

        await second.close()
        await wait_for(
            lambda: first.assignment() == all_partitions(topic, 6), "the survivor to own every partition", 10
        )
        await produce(url, topic, 6, 5, start=10)
        after = await read(first, 30)
        assert sorted(keys(after)) == sorted((p, o) for p in range(6) for o in range(10, 15))
        assert await first.getmany(timeout_ms=300) == {}


async def test_a_restarted_member_resumes_from_committed_offsets(
    url: str, new_topic: NewTopic, names: Iterator[str]
) -> None:
    topic, group = new_topic(3), next(names)
    await produce(url, topic, 3, 30)
    settings = {**GROUP_SETTINGS, "enable_auto_commit": False}
    async with Consumer(url, group_id=group, **settings) as before:
        before.subscribe([topic])
        processed = await read(before, 40)
        # A commit covers the partitions whose position is known; the 40 records may all have come
        # from two partitions before the third's first fetch, so its position is asked for first.
        positions = {tp: await before.position(tp) for tp in all_partitions(topic, 3)}
        await before.commit()
        committed = {tp: await before.committed(tp) for tp in all_partitions(topic, 3)}
        assert committed == positions
        assert sum(offset or 0 for offset in committed.values()) == 40
        uncommitted = await read(before, 5)
    async with Consumer(url, group_id=group, **settings) as after:
        after.subscribe([topic])
        rest = await read(after, 50)
        assert await after.getmany(timeout_ms=500) == {}
    assert set(keys(processed)).isdisjoint(keys(rest)), "a committed record was read twice"
    assert sorted(keys(processed) + keys(rest)) == sorted((p, o) for p in range(3) for o in range(30))
    assert set(keys(uncommitted)) <= set(keys(rest)), "records read but never committed are read again"


async def test_auto_commit_commits_consumed_positions_in_the_background(
    url: str, new_topic: NewTopic, names: Iterator[str]
) -> None:
    topic, group = new_topic(2), next(names)
    await produce(url, topic, 2, 20)
    async with Consumer(url, group_id=group, auto_commit_interval_ms=200, **GROUP_SETTINGS) as consumer:
        consumer.subscribe(topic)
        got = await read(consumer, 25)
        positions = {tp: await consumer.position(tp) for tp in all_partitions(topic, 2)}
        assert sum(positions.values()) == len(got) == 25
        committed: dict[TopicPartition, int | None] = {}

        async def refresh() -> None:
            for tp in positions:
                committed[tp] = await consumer.committed(tp)

        loop = asyncio.get_running_loop()

        def caught_up() -> bool:
            asyncio.run_coroutine_threadsafe(refresh(), loop).result(5)
            return committed == positions

        await wait_for(caught_up, "the auto-commit of the consumed positions", 5)
        await read(consumer, 15)
    async with Consumer(url, group_id=group, **GROUP_SETTINGS) as probe:
        assert {tp: await probe.committed(tp) for tp in positions} == {tp: 20 for tp in positions}, (
            "close() commits what was consumed since the last auto-commit"
        )


async def test_committed_returns_what_was_committed(
    url: str, cluster: Cluster, new_topic: NewTopic, names: Iterator[str]
) -> None:
    topic, group = new_topic(2), next(names)
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    await produce(url, topic, 2, 10)
    async with Consumer(url, group_id=group, enable_auto_commit=False, **GROUP_SETTINGS) as consumer:
        assert await consumer.committed(tp0) is None
        consumer.subscribe([topic])
        await wait_for(lambda: consumer.assignment() == {tp0, tp1}, "the assignment", 15)
        await consumer.commit({tp0: 7})
        assert (await consumer.committed(tp0), await consumer.committed(tp1)) == (7, None)
        await consumer.commit_async({tp0: 9, tp1: 3})
        assert (await consumer.committed(tp0), await consumer.committed(tp1)) == (9, 3)
        await consumer.unsubscribe()
        assert consumer.assignment() == set()
    status, body = cluster.v3("GET", f"/consumer-groups/{group}/offsets")
    assert status == 200
    assert {(e["partition_id"], e["offset"]) for e in body["data"]} == {(0, 9), (1, 3)}


async def test_a_pattern_subscription_picks_up_a_topic_created_later(
    url: str, new_topic: NewTopic, prefix: str
) -> None:
    first = new_topic(2, f"{prefix}-a")
    new_topic(1, f"other-{prefix}")
    async with Consumer(url, group_id=f"{prefix}-group", **GROUP_SETTINGS) as consumer:
        consumer.subscribe(pattern=rf"{prefix}-[a-z]")
        await wait_for(lambda: consumer.assignment() == all_partitions(first, 2), "the matching topic", 15)
        later = new_topic(3, f"{prefix}-b")
        await wait_for(
            lambda: consumer.assignment() == all_partitions(first, 2) | all_partitions(later, 3),
            "the topic created later",
            15,
        )
        await produce(url, later, 3, 4)
        records = await read(consumer, 12)
        assert sorted(keys(records)) == sorted((p, o) for p in range(3) for o in range(4))
        assert {r.topic for r in records} == {later}


def poll_into(consumer: SyncConsumer, seen: list[ConsumerRecord], count: int) -> bool:
    """One poll, its records added to ``seen``: whether ``count`` have been seen."""
    for records in consumer.poll(timeout_ms=200).values():
        seen.extend(records)
    return len(seen) >= count


def test_sync_consumer_subscribes_commits_and_resumes(url: str, new_topic: NewTopic, names: Iterator[str]) -> None:
    topic, group = new_topic(2), next(names)
    asyncio.run(produce(url, topic, 2, 10))
    settings = {**GROUP_SETTINGS, "enable_auto_commit": False}
    with SyncConsumer(url, group_id=group, **settings) as consumer:
        consumer.subscribe([topic])
        seen: list[ConsumerRecord] = []
        wait_until(lambda: poll_into(consumer, seen, 20), "the 20 records", 15)
        assert sorted(keys(seen)) == sorted((p, o) for p in range(2) for o in range(10))
        consumer.commit_async().result(10)
        assert consumer.committed(TopicPartition(topic, 0)) == 10
    asyncio.run(produce(url, topic, 2, 1, start=10))
    with SyncConsumer(url, group_id=group, **settings) as consumer:
        consumer.subscribe([topic])
        seen = []
        wait_until(lambda: poll_into(consumer, seen, 2), "the 2 records produced after the commit", 15)
        assert sorted(keys(seen)) == [(0, 10), (1, 10)]


async def test_a_member_removed_by_the_coordinator_rejoins_and_resumes_from_its_commit(
    url: str, cluster: Cluster, new_topic: NewTopic, names: Iterator[str]
) -> None:
    topic, group = new_topic(2), next(names)
    await produce(url, topic, 2, 10)
    async with Consumer(url, group_id=group, enable_auto_commit=False, **GROUP_SETTINGS) as consumer:
        consumer.subscribe([topic])
        assert len(await read(consumer, 20)) == 20
        await consumer.commit()
        epoch_before = consumer.member_epoch
        members = f"/consumer-groups/{group}/consumers/{consumer.member_id}"
        status, _ = cluster.v3("DELETE", members)
        assert status == 204
        await wait_for(
            lambda: consumer.member_epoch > epoch_before and consumer.assignment() == all_partitions(topic, 2),
            "the removed member to rejoin with a new epoch",
            15,
        )
        status, member = cluster.v3("GET", members)
        assert status == 200 and member["member_epoch"] == consumer.member_epoch
        await produce(url, topic, 2, 3, start=10)
        again = await read(consumer, 6)
        assert sorted(keys(again)) == sorted((p, o) for p in range(2) for o in range(10, 13))
