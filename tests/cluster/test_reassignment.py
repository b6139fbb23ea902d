"""The controller moves partitions (KIP-455) against the real sqlite store, and resumes a move after a failover.

The ISR is what the partition's leader would write (``isr_proposals.propose_isr``'s
compare-and-set): here the test writes it, since these brokers run no replicas.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.cluster.reassignment import PartitionMove
from broker.cluster.records import PartitionRecord, partition_key
from broker.errors import InvalidReplicaAssignment, UnknownPartition
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import InProcessCluster, start_cluster
from tests.cluster.test_partition_leadership import wait_for_records


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
