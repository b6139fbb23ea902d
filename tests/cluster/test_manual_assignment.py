"""The controller writes a manual replica assignment as given, against the real sqlite store.

Leader = first live replica, ISR = the live replicas, epochs 0; the assignment is checked
against the brokers the controller sees (registered, and not all in controlled shutdown),
and kept on the topic record so a successor completes a half-done creation as assigned.
"""

from __future__ import annotations

import pytest

from broker.cluster.records import TopicRecord, new_topic_id, topic_key
from broker.errors import InvalidReplicaAssignment
from broker.topics.new_topic import NewTopic
from tests.cluster.harness import InProcessCluster
from tests.cluster.test_partition_leadership import wait_for_records


async def test_partition_records_have_exactly_the_assigned_replicas_led_by_the_first(
    cluster: InProcessCluster,
) -> None:
    controller = (await cluster.wait_for_controller()).controller
    assignment = [[3, 1, 2], [2, 3, 1], [3, 2, 1], [1, 2, 3]]
    created = await controller.create_topic(
        NewTopic(name="placed", partitions_count=1, replication_factor=1, assignment=assignment)
    )
    stored = await cluster.partitions("placed")
    assert stored == created
    assert [(r.partition, r.replicas, r.leader, r.isr) for r in stored] == [
        (p, replicas, replicas[0], replicas) for p, replicas in enumerate(assignment)
    ]
    assert all((r.leader_epoch, r.partition_epoch) == (0, 0) for r in stored)
    assert all(r.leader_broker_epoch == cluster.brokers[r.leader].membership.broker_epoch for r in stored)
    topic_kv = await cluster.observer.get(topic_key("placed"))
    assert topic_kv is not None
    topic = TopicRecord.model_validate_json(topic_kv.value)
    assert (topic.partitions_count, topic.replication_factor, topic.replica_assignment) == (4, 3, assignment)


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ([[1, 9]], "partition 0 names broker 9, which is not a registered broker (registered: 1, 2, 3)"),
        ([[1, 2], [3]], "partition 1 has 1 replica(s) but partition 0 has 2"),
        ([[2, 2]], "partition 0 names broker 2 more than once"),
        ([[]], "partition 0 has no replicas"),
    ],
)
async def test_an_assignment_the_controller_refuses_writes_nothing(
    cluster: InProcessCluster, assignment: list[list[int]], message: str
) -> None:
    controller = (await cluster.wait_for_controller()).controller
    with pytest.raises(InvalidReplicaAssignment) as refused:
        await controller.create_topic(
            NewTopic(name="refused", partitions_count=1, replication_factor=1, assignment=assignment)
        )
    assert message in refused.value.message
    assert await cluster.observer.get(topic_key("refused")) is None
    assert await cluster.partitions("refused") == []


async def test_a_broker_in_controlled_shutdown_is_a_replica_out_of_the_isr_and_never_the_only_one(
    cluster: InProcessCluster,
) -> None:
    """Kafka's KRaft controller: it may be named (it is registered), it leads nothing and is not in sync."""
    controller = (await cluster.wait_for_controller()).controller
    await controller.controlled_shutdown(3)
    [record] = await controller.create_topic(
        NewTopic(name="around-3", partitions_count=1, replication_factor=1, assignment=[[3, 2, 1]])
    )
    assert (record.replicas, record.leader, record.isr) == ([3, 2, 1], 2, [2, 1])
    with pytest.raises(InvalidReplicaAssignment, match=r"every broker of partition 0 \(3\) is in controlled shutdown"):
        await controller.create_topic(
            NewTopic(name="only-3", partitions_count=1, replication_factor=1, assignment=[[3]])
        )
    assert await cluster.observer.get(topic_key("only-3")) is None


async def test_a_half_done_manual_creation_is_completed_as_assigned(cluster: InProcessCluster) -> None:
    """A controller that died after the topic record leaves its successor the assignment to follow."""
    assignment = [[2, 3], [3, 2]]
    half = TopicRecord(
        name="half-placed",
        topic_id=new_topic_id(),
        partitions_count=2,
        replication_factor=2,
        replica_assignment=assignment,
    )
    await cluster.observer.put(topic_key("half-placed"), half.model_dump_json().encode())
    await cluster.start_broker(4)
    completed = await wait_for_records(cluster, "half-placed", lambda rs: len(rs) == 2, "the missing partitions")
    assert [(r.replicas, r.leader, r.isr) for r in completed] == [([2, 3], 2, [2, 3]), ([3, 2], 3, [3, 2])]
