"""A leader's ISR changes reach a real sqlite store in batches (Kafka's AlterPartition manager).

The store is the real one; ``CountingStore`` only counts the batch writes (and, for one
test, lets the controller write a record between the batch's read and its write), so
the tests can tell one transaction from many.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import pytest

from broker.cluster.records import PartitionRecord, broker_key, partition_key
from broker.cluster.sqlite_store import SqliteMetadataStore
from broker.cluster.store import MAX_PUT_BATCH
from broker.node.isr_proposals import IsrProposals
from broker.replication.actions import ProposeIsr
from broker.replication.isr_change import IsrChangeRefused

TOPIC = "orders"


class CountingStore(SqliteMetadataStore):
    """The sqlite store, counting ``put_all_if`` calls; ``before_batch`` runs before each."""

    def __init__(self, path: Path, changelog_retention: int = 10_000) -> None:
        super().__init__(path, changelog_retention)
        self.batches: list[int] = []
        self.before_batch: Callable[[], object] | None = None

    async def put_all_if(self, items: Sequence[tuple[str, bytes, int]]) -> int | None:
        self.batches.append(len(items))
        if self.before_batch is not None:
            before, self.before_batch = self.before_batch, None
            await before()  # type: ignore[misc]
        return await super().put_all_if(items)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[CountingStore]:
    opened = await CountingStore.open(tmp_path / "metadata.db")
    assert isinstance(opened, CountingStore)
    yield opened
    await opened.close()


async def _register(store: CountingStore, *broker_ids: int) -> dict[int, int]:
    return {broker_id: await store.put(broker_key(broker_id), b"{}") for broker_id in broker_ids}


async def _partitions(store: CountingStore, count: int) -> list[PartitionRecord]:
    records = [
        PartitionRecord(topic=TOPIC, partition=p, leader=1, leader_epoch=3, partition_epoch=7, replicas=[1, 2], isr=[1])
        for p in range(count)
    ]
    for record in records:
        await store.put(partition_key(TOPIC, record.partition), record.model_dump_json().encode())
    return records


def _expansion(record: PartitionRecord, broker_epoch: int, leader_epoch: int | None = None) -> ProposeIsr:
    return ProposeIsr(
        topic=TOPIC,
        partition=record.partition,
        leader_id=1,
        leader_epoch=record.leader_epoch if leader_epoch is None else leader_epoch,
        partition_epoch=record.partition_epoch,
        new_isr=(1, 2),
        change="expand",
        joining_broker_epochs=((2, broker_epoch),),
    )


async def _stored(store: CountingStore, partition: int) -> PartitionRecord:
    current = await store.get(partition_key(TOPIC, partition))
    assert current is not None
    return PartitionRecord.model_validate_json(current.value)


async def test_changes_proposed_together_are_written_in_batches_of_at_most_127(store: CountingStore) -> None:
    epochs = await _register(store, 1, 2)
    records = await _partitions(store, 200)
    proposals = IsrProposals(store)
    answers = await asyncio.gather(*(proposals.propose(_expansion(r, epochs[2])) for r in records))
    assert store.batches == [MAX_PUT_BATCH, 200 - MAX_PUT_BATCH]
    for record, answer in zip(records, answers, strict=True):
        assert isinstance(answer, PartitionRecord), answer
        assert (answer.isr, answer.partition_epoch) == ([1, 2], 8)
        assert await _stored(store, record.partition) == answer


async def test_a_lone_change_goes_out_at_once_and_the_next_waits_for_no_batch(store: CountingStore) -> None:
    epochs = await _register(store, 1, 2)
    first, second = await _partitions(store, 2)
    proposals = IsrProposals(store)
    assert isinstance(await proposals.propose(_expansion(first, epochs[2])), PartitionRecord)
    assert isinstance(await proposals.propose(_expansion(second, epochs[2])), PartitionRecord)
    assert store.batches == [1, 1]


async def test_a_refused_change_is_answered_alone_and_the_rest_of_its_batch_is_written(store: CountingStore) -> None:
    epochs = await _register(store, 1, 2)
    records = await _partitions(store, 3)
    stale_leader = _expansion(records[0], epochs[2], leader_epoch=2)
    restarted_joiner = _expansion(records[1], epochs[2] - 1)
    answers = await asyncio.gather(
        *(IsrProposals(store).propose(p) for p in (stale_leader, restarted_joiner, _expansion(records[2], epochs[2])))
    )
    assert answers[0] == IsrChangeRefused(
        "based on leader, leader epoch, partition epoch (1, 2, 7), the record has (1, 3, 7)", record_moved=True
    )
    assert isinstance(answers[1], IsrChangeRefused) and answers[1].record_moved is False
    assert "no longer registered" in answers[1].reason
    assert isinstance(answers[2], PartitionRecord) and answers[2].isr == [1, 2]
    assert [(await _stored(store, p)).isr for p in range(3)] == [[1], [1], [1, 2]]
    assert store.batches == [1]


async def test_a_batch_a_record_moved_under_is_proposed_again_partition_by_partition(store: CountingStore) -> None:
    epochs = await _register(store, 1, 2)
    records = await _partitions(store, 3)
    new_leader = records[1].model_copy(update={"leader": 2, "leader_epoch": 4, "partition_epoch": 8, "isr": [2]})

    async def controller_elects_broker_2() -> None:
        await store.put(partition_key(TOPIC, 1), new_leader.model_dump_json().encode())

    store.before_batch = controller_elects_broker_2
    proposals = IsrProposals(store)
    answers = await asyncio.gather(*(proposals.propose(_expansion(r, epochs[2])) for r in records))
    assert store.batches == [3, 1, 1], "the failed batch of 3, then each change taken on its own"
    assert isinstance(answers[1], IsrChangeRefused) and answers[1].record_moved
    assert [a.isr for a in (answers[0], answers[2]) if isinstance(a, PartitionRecord)] == [[1, 2], [1, 2]]
    assert await _stored(store, 1) == new_leader


async def test_two_changes_of_one_partition_never_share_a_batch(store: CountingStore) -> None:
    epochs = await _register(store, 1, 2, 3)
    (record,) = await _partitions(store, 1)
    proposals = IsrProposals(store)
    first = _expansion(record, epochs[2])
    again = dataclasses.replace(first, new_isr=(1, 3), joining_broker_epochs=((3, epochs[3]),))
    answers = await asyncio.gather(proposals.propose(first), proposals.propose(again))
    assert store.batches == [1]
    assert isinstance(answers[0], PartitionRecord) and answers[0].isr == [1, 2]
    assert isinstance(answers[1], IsrChangeRefused) and answers[1].record_moved, "the second was based on epoch 7"


async def test_a_store_that_fails_leaves_every_change_of_the_batch_unknown(store: CountingStore) -> None:
    epochs = await _register(store, 1, 2)
    records = await _partitions(store, 2)
    await store.close()
    proposals = IsrProposals(store)
    answers = await asyncio.gather(*(proposals.propose(_expansion(r, epochs[2])) for r in records))
    assert answers == [None, None]


async def test_closing_cancels_the_changes_still_waiting(store: CountingStore) -> None:
    epochs = await _register(store, 1, 2)
    records = await _partitions(store, 2)
    reached, held = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        reached.set()
        await held.wait()

    store.before_batch = hold
    proposals = IsrProposals(store)
    waiting = [asyncio.create_task(proposals.propose(_expansion(r, epochs[2]))) for r in records]
    await reached.wait()
    await proposals.close()
    for task in waiting:
        with pytest.raises(asyncio.CancelledError):
            await task
    assert [(await _stored(store, p)).isr for p in range(2)] == [[1], [1]]
