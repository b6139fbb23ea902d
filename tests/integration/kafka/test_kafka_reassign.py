"""Kafka's AlterPartitionReassignments and ListPartitionReassignments on real brokers: a move started at the
Kafka door completes as one started over HTTP does, the HTTP listing and the Kafka listing agree while it
runs, and cancelling a partition that is not moving is Kafka's NO_REASSIGNMENT_IN_PROGRESS.

The new replica's broker fetches at 1 000 bytes/s until the listing is checked (its follower throttle
rate), so the move is still running then: without it a fast machine could finish the copy first, and
the listing would check nothing."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from broker.topics.throttle_rates import FOLLOWER_RATE
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster
from tests.unit.kafka.requests import alter_partition_reassignments, list_partition_reassignments

pytestmark = pytest.mark.integration


def test_a_move_through_the_kafka_door_completes_and_is_listed_at_both_doors(kafka_cluster: Cluster) -> None:
    topic = "kafka-moved"
    status, created = kafka_cluster.v3("POST", "/topics", {"topic_name": topic, "replicas_assignments": {"0": [1, 2]}})
    assert status == 201, created
    kafka_cluster.wait_for_topic(topic, 1)
    assert kafka_cluster.produce(topic, ["x" * 1000] * 100, via=1)[0] == 207
    throttle = f"/brokers/3/configs/{FOLLOWER_RATE}"
    assert kafka_cluster.v3("PUT", throttle, {"value": "1000"}, via=3)[0] == 204
    connection = Connection(kafka_cluster.kafka_addresses[2])
    try:
        moved = connection.call(alter_partition_reassignments(1, [(topic, 0, [3, 2]), (topic, 7, [1, 2])]))
        assert moved.error_code == ErrorCode.none
        answers = {p.partition_index: p.error_code for t in moved.responses for p in t.partitions}
        assert answers == {0: ErrorCode.none, 7: ErrorCode.unknown_topic_or_partition}

        listed = connection.call(list_partition_reassignments(0, {topic: [0]}))
        assert listed.error_code == ErrorCode.none
        [entry] = listed.topics
        [partition] = entry.partitions
        assert (list(partition.adding_replicas), list(partition.removing_replicas)) == ([3], [1])
        assert kafka_cluster.v3("DELETE", throttle, via=3)[0] == 204

        def done() -> bool:
            state = kafka_cluster.partitions(topic, via=2)[0]
            return state.replicas == [3, 2] and sorted(state.isr) == [2, 3]

        kafka_cluster.wait_until(done, "the move to complete", timeout_s=60)
        assert connection.call(list_partition_reassignments(0, None)).topics == ()
        status, listing = kafka_cluster.v3("GET", "/topics/-/partitions/-/reassignment", via=2)
        assert (status, listing["data"]) == (200, [])

        cancelled = connection.call(alter_partition_reassignments(0, [(topic, 0, None)]))
        [[code]] = [[p.error_code for p in t.partitions] for t in cancelled.responses]
        assert code == ErrorCode.no_reassignment_in_progress
    finally:
        kafka_cluster.v3("DELETE", throttle, via=3)
        connection.close()
