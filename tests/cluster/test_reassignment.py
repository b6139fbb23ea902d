"""The controller moves partitions (KIP-455) against the real sqlite store, and resumes a move after a failover;
a move may change a partition's replica count, and the topic record's replication factor follows once every
partition agrees.

The ISR is what the partition's leader would write (``isr_proposals.propose_isr``'s
compare-and-set): here the test writes it, since these brokers run no replicas.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.cluster.reassignment import PartitionMove
from broker.cluster.records import PartitionRecord, TopicRecord, partition_key, topic_key
from broker.errors import InvalidReplicaAssignment, UnknownPartition
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import InProcessCluster, start_cluster
from tests.cluster.test_partition_leadership import wait_for_records
from tests.support.waiting import wait_until_async


async def _replication_factor(cluster: InProcessCluster, topic: str) -> int:
    current = await cluster.observer.get(topic_key(topic))
    assert current is not None, f"topic {topic} is gone"
    return TopicRecord.model_validate_json(current.value).replication_factor


async def _replication_factor_is(cluster: InProcessCluster, topic: str, expected: int) -> bool | None:
    return await _replication_factor(cluster, topic) == expected or None


async def _leader_writes_isr(cluster: InProcessCluster, record: PartitionRecord, isr: list[int]) -> None:
    """The leader's AlterPartition: the ISR, by compare-and-set on the record it read."""
    key = partition_key(record.topic, record.partition)
    current = await cluster.observer.get(key)
    assert current is not None and PartitionRecord.model_validate_json(current.value) == record
    grown = record.model_copy(update={"isr": isr, "partition_epoch": record.partition_epoch + 1})
    assert await cluster.observer.put_if(key, grown.model_dump_json().encode(), current.mod_revision) is not None


@pytest.fixture
async def four(tmp_path: Path):
    cluster = await start_cluster(tmp_path, [1, 2, 3, 4])
    yield cluster
    await cluster.close()


async def test_a_move_keeps_both_replica_sets_until_the_new_replica_is_in_sync_then_hands_over(
    four: InProcessCluster,
) -> None:
    controller = (await four.wait_for_controller()).controller
    await controller.create_topic(
        NewTopic(name="moving", partitions_count=1, replication_factor=3, assignment=[[1, 2, 3]])
    )
    [moving] = await controller.alter_reassignments([PartitionMove(topic="moving", partition=0, replicas=[2, 3, 4])])
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == ([2, 3, 4, 1], [4], [1])
    assert (moving.leader, moving.isr) == (1, [1, 2, 3])
    assert await four.partitions("moving") == [moving]

    await _leader_writes_isr(four, moving, [1, 2, 3, 4])
    [done] = await wait_for_records(four, "moving", lambda rs: not rs[0].adding_replicas, "the move to complete")
    assert (done.replicas, done.isr, done.removing_replicas) == ([2, 3, 4], [2, 3, 4], [])
    assert (done.leader, done.leader_epoch) == (2, moving.leader_epoch + 1)
    assert done.leader_broker_epoch == four.brokers[2].membership.broker_epoch


async def test_a_new_controller_completes_a_move_its_predecessor_started(four: InProcessCluster) -> None:
    first = await four.wait_for_controller()
    await first.controller.create_topic(
        NewTopic(name="handed", partitions_count=1, replication_factor=2, assignment=[[2, 3]])
    )
    [moving] = await first.controller.alter_reassignments([PartitionMove(topic="handed", partition=0, replicas=[3, 4])])
    await four.kill(first.broker_id)
    successor = await four.wait_for_controller(timeout_s=10)
    assert successor.broker_id != first.broker_id
    [current] = await four.partitions("handed")
    await _leader_writes_isr(four, current, [*current.isr, 4])
    [done] = await wait_for_records(four, "handed", lambda rs: rs[0].replicas == [3, 4], "the successor to complete")
    assert (done.isr, done.leader, done.adding_replicas) == ([3, 4], 3, [])
    assert moving.replicas == [3, 4, 2]


async def test_cancelling_returns_to_the_original_replicas_and_drops_the_copy(four: InProcessCluster) -> None:
    controller = (await four.wait_for_controller()).controller
    await controller.create_topic(
        NewTopic(name="undone", partitions_count=1, replication_factor=2, assignment=[[1, 2]])
    )
    [moving] = await controller.alter_reassignments([PartitionMove(topic="undone", partition=0, replicas=[3, 4])])
    await _leader_writes_isr(four, moving, [1, 2, 3])
    [cancelled] = await controller.alter_reassignments([PartitionMove(topic="undone", partition=0, replicas=None)])
    assert (cancelled.replicas, cancelled.isr, cancelled.adding_replicas, cancelled.removing_replicas) == (
        [1, 2],
        [1, 2],
        [],
        [],
    )


async def test_a_request_with_one_bad_move_moves_nothing(four: InProcessCluster) -> None:
    controller = (await four.wait_for_controller()).controller
    await controller.create_topic(
        NewTopic(name="kept", partitions_count=2, replication_factor=2, assignment=[[1, 2], [2, 3]])
    )
    before = await four.partitions("kept")
    good = PartitionMove(topic="kept", partition=0, replicas=[3, 4])
    with pytest.raises(InvalidReplicaAssignment, match="broker 9 is not a live broker"):
        await controller.alter_reassignments([good, PartitionMove(topic="kept", partition=1, replicas=[2, 9])])
    with pytest.raises(UnknownPartition, match="no partition 5"):
        await controller.alter_reassignments([good, PartitionMove(topic="kept", partition=5, replicas=[2, 3])])
    assert await four.partitions("kept") == before


async def test_growing_and_shrinking_partitions_sets_the_topic_replication_factor_once_all_agree(
    four: InProcessCluster,
) -> None:
    controller = (await four.wait_for_controller()).controller
    await controller.create_topic(
        NewTopic(name="resized", partitions_count=2, replication_factor=2, assignment=[[1, 2], [2, 3]])
    )
    [growing] = await controller.alter_reassignments([PartitionMove(topic="resized", partition=0, replicas=[1, 2, 3])])
    assert (growing.replicas, growing.adding_replicas, growing.removing_replicas) == ([1, 2, 3], [3], [])
    await _leader_writes_isr(four, growing, [1, 2, 3])
    await wait_for_records(four, "resized", lambda rs: not rs[0].adding_replicas, "partition 0 to grow")
    assert await _replication_factor(four, "resized") == 2, "partition 1 still has two replicas"

    [second] = await controller.alter_reassignments([PartitionMove(topic="resized", partition=1, replicas=[2, 3, 4])])
    await _leader_writes_isr(four, second, [2, 3, 4])
    await wait_for_records(four, "resized", lambda rs: rs[1].replicas == [2, 3, 4], "partition 1 to grow")
    await wait_until_async(
        lambda: _replication_factor_is(four, "resized", 3), "the topic record to say replication factor 3"
    )

    [first_shrunk] = await controller.alter_reassignments(
        [PartitionMove(topic="resized", partition=0, replicas=[1, 2])]
    )
    assert (first_shrunk.replicas, first_shrunk.isr, first_shrunk.leader) == ([1, 2], [1, 2], 1)
    assert await _replication_factor(four, "resized") == 3, "partition 1 still has three replicas"
    [shrunk] = await controller.alter_reassignments([PartitionMove(topic="resized", partition=1, replicas=[3, 4])])
    assert (shrunk.replicas, shrunk.isr, shrunk.leader, shrunk.leader_epoch) == (
        [3, 4],
        [3, 4],
        3,
        second.leader_epoch + 1,
    )
    assert await _replication_factor(four, "resized") == 2, "written in the same call that settled the last partition"


async def test_a_cancelled_growth_leaves_the_replication_factor_and_drops_the_added_replica(
    four: InProcessCluster,
) -> None:
    controller = (await four.wait_for_controller()).controller
    await controller.create_topic(
        NewTopic(name="regrown", partitions_count=1, replication_factor=2, assignment=[[1, 2]])
    )
    [moving] = await controller.alter_reassignments([PartitionMove(topic="regrown", partition=0, replicas=[3, 4, 1])])
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == ([3, 4, 1, 2], [3, 4], [2])
    await _leader_writes_isr(four, moving, [1, 2, 3])
    [cancelled] = await controller.alter_reassignments([PartitionMove(topic="regrown", partition=0, replicas=None)])
    assert (cancelled.replicas, cancelled.isr, cancelled.adding_replicas) == ([1, 2], [1, 2], [])
    assert await _replication_factor(four, "regrown") == 2


async def test_a_target_below_the_topics_min_insync_replicas_is_refused(four: InProcessCluster) -> None:
    controller = (await four.wait_for_controller()).controller
    await controller.create_topic(
        NewTopic(
            name="guarded",
            partitions_count=1,
            replication_factor=3,
            configs={"min.insync.replicas": "2"},
            assignment=[[1, 2, 3]],
        )
    )
    with pytest.raises(InvalidReplicaAssignment, match=r"guarded-0: the target names 1 broker\(s\) .* needs 2 in sync"):
        await controller.alter_reassignments([PartitionMove(topic="guarded", partition=0, replicas=[4])])
    [kept] = await four.partitions("guarded")
    assert (kept.replicas, kept.adding_replicas) == ([1, 2, 3], [])
    [shrunk] = await controller.alter_reassignments([PartitionMove(topic="guarded", partition=0, replicas=[2, 3])])
    assert shrunk.replicas == [2, 3]
    assert await _replication_factor(four, "guarded") == 2


async def test_a_new_controller_writes_the_replication_factor_its_predecessor_settled_but_did_not_write(
    four: InProcessCluster,
) -> None:
    """The partition grew (as a completion writes it) but the controller died before the topic record's
    write: its successor's first reconciliation writes it."""
    first = await four.wait_for_controller()
    await first.controller.create_topic(
        NewTopic(name="orphaned", partitions_count=1, replication_factor=2, assignment=[[2, 3]])
    )
    [record] = await four.partitions("orphaned")
    key = partition_key("orphaned", 0)
    current = await four.observer.get(key)
    assert current is not None
    grown = record.model_copy(
        update={"replicas": [2, 3, 4], "isr": [2, 3, 4], "partition_epoch": record.partition_epoch + 1}
    )
    assert await four.observer.put_if(key, grown.model_dump_json().encode(), current.mod_revision) is not None
    assert await _replication_factor(four, "orphaned") == 2
    await four.kill(first.broker_id)
    successor = await four.wait_for_controller(timeout_s=10)
    assert successor.broker_id != first.broker_id
    await wait_until_async(
        lambda: _replication_factor_is(four, "orphaned", 3), "the successor to write replication factor 3"
    )
