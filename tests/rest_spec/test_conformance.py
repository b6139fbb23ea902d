"""Every served REST Proxy v3 operation, driven against a live 3-broker cluster and held to the spec's models.

One walk (``test_every_served_operation_answers_the_spec_shapes``) calls each operation
the table (``operations``) marks ``implemented`` or ``different`` with a valid request,
in the order a user would, validating every answer strictly against the spec's model
for its status; it ends by asserting that no served operation was left out, so a row
cannot claim conformance the suite never checked. The bad-input tests hold refusals to
the spec's ``Error`` body and ``error_code``s, and check that a refused request stored
nothing. All tests share one cluster (module scope; the xdist grouping keeps the module
on one worker) and use names of their own, so their order does not matter.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from tests.rest_spec import models as m
from tests.rest_spec import walk_admin
from tests.rest_spec.harness import SpecCaller
from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration
PARTITIONS = 3

cluster = cluster_fixture(ClusterSpec(), scope="module")


@pytest.fixture
def spec(cluster: Cluster) -> SpecCaller:
    return SpecCaller(cluster.url(), cluster.cluster_id)


def _string(data: str) -> dict:
    return {"type": "STRING", "data": data}


def _walk_cluster(spec: SpecCaller) -> None:
    clusters = spec.call("listKafkaClusters", expect=200).model
    assert isinstance(clusters, m.ClusterDataList)
    assert [c.cluster_id for c in clusters.data] == [spec.cluster_id]
    one = spec.call("getKafkaCluster", expect=200).model
    assert isinstance(one, m.ClusterData) and one.metadata.self.endswith(f"/v3/clusters/{spec.cluster_id}")
    brokers = spec.call("listKafkaBrokers", expect=200).model
    assert isinstance(brokers, m.BrokerDataList) and sorted(b.broker_id for b in brokers.data) == [1, 2, 3]
    for broker in brokers.data:
        described = spec.call("getKafkaBroker", {"broker_id": broker.broker_id}, expect=200).model
        assert isinstance(described, m.BrokerData) and described.broker_id == broker.broker_id


def _walk_topics(spec: SpecCaller, cluster: Cluster, topic: str) -> None:
    dry = {"topic_name": f"{topic}-dry", "partitions_count": 2, "replication_factor": 3, "validate_only": True}
    would_be = spec.call("createKafkaTopic", expect=200, body=dry).model
    assert isinstance(would_be, m.TopicData) and would_be.partitions_count == 2
    spec.error("getKafkaTopic", {"topic_name": f"{topic}-dry"}, expect=404)

    body = {
        "topic_name": topic,
        "partitions_count": PARTITIONS,
        "replication_factor": 3,
        "configs": [{"name": "retention.ms", "value": "600000"}],
    }
    created = spec.call("createKafkaTopic", expect=201, body=body).model
    assert isinstance(created, m.TopicData)
    assert (created.topic_name, created.partitions_count, created.replication_factor) == (topic, PARTITIONS, 3)
    assert created.configs.related.endswith(f"/topics/{topic}/configs")

    listed = spec.call("listKafkaTopics", expect=200).model
    assert isinstance(listed, m.TopicDataList) and topic in {t.topic_name for t in listed.data}
    spec.call("getKafkaTopic", {"topic_name": topic}, expect=200)
    spec.call("getKafkaTopic", {"topic_name": topic}, expect=200, query={"include_authorized_operations": "false"})
    partitions = spec.call("listKafkaPartitions", {"topic_name": topic}, expect=200).model
    assert isinstance(partitions, m.PartitionDataList)
    assert sorted(p.partition_id for p in partitions.data) == list(range(PARTITIONS))
    for partition_id in range(PARTITIONS):
        params = {"topic_name": topic, "partition_id": partition_id}
        partition = spec.call("getKafkaPartition", params, expect=200).model
        assert isinstance(partition, m.PartitionData) and partition.replicas.related.endswith("/replicas")
        offsets = spec.call("listKafkaPartitionOffsets", params, expect=200, query={"offset_type": "latest"}).model
        assert isinstance(offsets, m.PartitionWithOffsetsData) and offsets.earliest_offset == 0
    cluster.wait_in_every_isr(topic, 3)


def _walk_produce(spec: SpecCaller, topic: str) -> None:
    """The single form (with a date-time timestamp), streaming mode (a bad record mid-stream gets its own error
    result, in its place, and the stream goes on) and records:batch, all on partition 0."""
    record = {
        "partition_id": 0,
        "key": {"type": "BINARY", "data": "a2V5"},
        "value": {"type": "JSON", "data": {"n": 1}},
        "headers": [{"name": "h", "value": "dmFsdWU="}],
        "timestamp": "2021-02-05T19:14:42Z",
    }
    single = spec.call("produceRecord", {"topic_name": topic}, expect=200, body=record).model
    assert isinstance(single, m.ProduceResponse)
    assert (single.error_code, single.partition_id, single.offset) == (200, 0, 0)
    assert single.timestamp == datetime(2021, 2, 5, 19, 14, 42, tzinfo=UTC)
    assert single.key is not None and (single.key.type, single.key.size) == ("BINARY", 3)

    stream = [{"partition_id": 0, "value": _string(f"s{i}")} for i in range(4)]
    stream.insert(2, {"partition_id": 0, "value": {"type": "BINARY", "data": "@@"}})
    streamed = spec.stream_records(topic, stream)
    assert [(r.error_code, r.offset) for r in streamed] == [(200, 1), (200, 2), (40001, None), (200, 3), (200, 4)]

    entries = [{"id": f"e{i}", "partition_id": 0, "value": _string(f"b{i}")} for i in range(3)]
    batch = spec.call("produceRecordsBatch", {"topic_name": topic}, expect=207, body={"entries": entries}).model
    assert isinstance(batch, m.ProduceBatchResponse)
    assert [(s.id, s.offset) for s in batch.successes] == [("e0", 5), ("e1", 6), ("e2", 7)]
    assert batch.failures == []

    offsets = spec.call("listKafkaPartitionOffsets", {"topic_name": topic, "partition_id": 0}, expect=200).model
    assert isinstance(offsets, m.PartitionWithOffsetsData) and offsets.latest_offset == 8


def _walk_groups(spec: SpecCaller, cluster: Cluster, topic: str) -> tuple[str, str]:
    """A member that joins and commits every partition (only partition 0 holds records): each lag row is committed."""
    group, member = f"{topic}-group", "member-1"
    groups = f"/consumer-groups/{group}"
    status, joined = cluster.v3(
        "POST",
        f"{groups}/consumers/{member}:heartbeat",
        {"member_epoch": 0, "subscribed_topics": [topic], "client_id": "client-1"},
    )
    assert status == 200, joined
    committed_at = {0: 1} | {p: 0 for p in range(1, PARTITIONS)}
    offsets = [{"topic_name": topic, "partition_id": p, "offset": o} for p, o in committed_at.items()]
    status, committed = cluster.v3(
        "POST", f"{groups}/offsets", {"member_id": member, "member_epoch": joined["member_epoch"], "offsets": offsets}
    )
    assert status == 200, committed

    listed = spec.call("listKafkaConsumerGroups", expect=200).model
    assert isinstance(listed, m.ConsumerGroupDataList) and group in {g.consumer_group_id for g in listed.data}
    described = spec.call("getKafkaConsumerGroup", {"consumer_group_id": group}, expect=200).model
    assert isinstance(described, m.ConsumerGroupData)
    assert (described.type, described.is_mixed_consumer_group) == ("CONSUMER", False)
    members = spec.call("listKafkaConsumers", {"consumer_group_id": group}, expect=200).model
    assert isinstance(members, m.ConsumerDataList) and [c.consumer_id for c in members.data] == [member]
    one = spec.call("getKafkaConsumer", {"consumer_group_id": group, "consumer_id": member}, expect=200).model
    assert isinstance(one, m.ConsumerData) and one.client_id == "client-1"
    assert one.assignments.related.endswith(f"/consumers/{member}/assignments")

    lags = spec.call("listKafkaConsumerLags", {"consumer_group_id": group}, expect=200).model
    assert isinstance(lags, m.ConsumerLagDataList)
    assert sorted((row.partition_id, row.current_offset) for row in lags.data) == sorted(committed_at.items())
    params = {"consumer_group_id": group, "topic_name": topic, "partition_id": 0}
    lag = spec.call("getKafkaConsumerLag", params, expect=200).model
    assert isinstance(lag, m.ConsumerLagData) and (lag.log_end_offset, lag.lag) == (8, 7)
    summary = spec.call("getKafkaConsumerGroupLagSummary", {"consumer_group_id": group}, expect=200).model
    assert isinstance(summary, m.ConsumerGroupLagSummaryData)
    assert (summary.consumer_group_id, summary.max_lag, summary.max_lag_partition_id) == (group, 7, 0)
    return group, member


def _walk_acls(spec: SpecCaller, topic: str) -> None:
    acl = {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "principal": "User:alice",
        "host": "*",
        "operation": "READ",
        "permission": "ALLOW",
    }
    spec.call("createKafkaAcls", expect=201, body=acl)
    found = spec.call("getKafkaAcls", expect=200, query={"resource_name": topic}).model
    assert isinstance(found, m.AclDataList)
    assert [(a.principal, a.operation) for a in found.data] == [("User:alice", "READ")]
    deleted = spec.call("deleteKafkaAcls", expect=200, query=acl).model
    assert isinstance(deleted, m.DeleteAclsResponse) and len(deleted.data) == 1


def test_every_served_operation_answers_the_spec_shapes(spec: SpecCaller, cluster: Cluster) -> None:
    topic = "spec-walk"
    _walk_cluster(spec)
    _walk_topics(spec, cluster, topic)
    _walk_produce(spec, topic)
    group, member = _walk_groups(spec, cluster, topic)
    walk_admin.walk_assignments(spec, group, member, topic, PARTITIONS)
    _walk_acls(spec, topic)
    walk_admin.walk_acl_batch(spec, topic)
    walk_admin.walk_topic_configs(spec, topic)
    walk_admin.walk_broker_configs(spec, [1, 2, 3])
    walk_admin.walk_cluster_configs(spec)
    walk_admin.walk_replicas(spec, topic, PARTITIONS, 3)
    walk_admin.walk_partition_count(spec, f"{topic}-grow")
    walk_admin.walk_manual_assignment(spec, f"{topic}-placed")
    spec.call("deleteKafkaTopic", {"topic_name": topic}, expect=204)
    spec.error("getKafkaTopic", {"topic_name": topic}, expect=404)
    assert spec.missing() == []


def test_creating_an_existing_topic_is_400_with_40002_and_changes_nothing(spec: SpecCaller, cluster: Cluster) -> None:
    cluster.create_topic("spec-exists", 2, 3)
    error = spec.error("createKafkaTopic", expect=400, body={"topic_name": "spec-exists", "partitions_count": 5})
    assert error.error_code == 40002 and "already exists" in (error.message or "")
    topic = spec.call("getKafkaTopic", {"topic_name": "spec-exists"}, expect=200).model
    assert isinstance(topic, m.TopicData) and topic.partitions_count == 2


@pytest.mark.parametrize(
    ("name", "params", "error_code"),
    [
        ("getKafkaTopic", {"topic_name": "spec-absent"}, 40403),
        ("deleteKafkaTopic", {"topic_name": "spec-absent"}, 40403),
        ("listKafkaPartitions", {"topic_name": "spec-absent"}, 40403),
        ("getKafkaPartition", {"topic_name": "spec-absent", "partition_id": 0}, 40403),
        ("listKafkaPartitionOffsets", {"topic_name": "spec-absent", "partition_id": 0}, 40403),
        ("getKafkaBroker", {"broker_id": 99}, 40400),
    ],
)
def test_unknown_resources_are_404_with_the_spec_codes(
    spec: SpecCaller, name: str, params: dict, error_code: int
) -> None:
    assert spec.error(name, params, expect=404).error_code == error_code


def test_an_unknown_partition_of_a_known_topic_is_40402(spec: SpecCaller, cluster: Cluster) -> None:
    cluster.create_topic("spec-one-partition", 1, 3)
    params = {"topic_name": "spec-one-partition", "partition_id": 7}
    assert spec.error("getKafkaPartition", params, expect=404).error_code == 40402
    body = {"partition_id": 7, "value": _string("x")}
    assert spec.error("produceRecord", {"topic_name": "spec-one-partition"}, expect=404, body=body).error_code == 40402


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("getKafkaCluster", {}),
        ("listKafkaTopics", {}),
        ("listKafkaBrokers", {}),
        ("listKafkaConsumerGroups", {}),
        ("getKafkaAcls", {}),
    ],
)
def test_an_unknown_cluster_is_404_with_40401(spec: SpecCaller, name: str, params: dict) -> None:
    assert spec.error(name, params, expect=404, cluster_id="no-such-cluster").error_code == 40401


@pytest.mark.parametrize(
    "name", ["getKafkaConsumerGroup", "listKafkaConsumers", "listKafkaConsumerLags", "getKafkaConsumerGroupLagSummary"]
)
def test_an_unknown_group_is_404(spec: SpecCaller, name: str) -> None:
    spec.error(name, {"consumer_group_id": "spec-no-such-group"}, expect=404)


def test_records_for_an_unknown_topic_are_404_40403_and_create_nothing(spec: SpecCaller) -> None:
    body = {"value": _string("x")}
    assert spec.error("produceRecord", {"topic_name": "spec-nowhere"}, expect=404, body=body).error_code == 40403
    batch = {"entries": [{"id": "1", "value": _string("x")}]}
    spec.error("produceRecordsBatch", {"topic_name": "spec-nowhere"}, expect=404, body=batch)
    spec.error("getKafkaTopic", {"topic_name": "spec-nowhere"}, expect=404)


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"{not json", 400),
        (b'{"topic_name": 5}', 422),
        (b'{"topic_name": "spec-malformed", "partitions_count": "three"}', 422),
        (b'{"topic_name": "spec-malformed", "replicas_assignments": {"0": "one"}}', 422),
        (b'{"topic_name": "spec-malformed", "replicas_assignments": {"1": [1]}}', 400),
        (b'{"topic_name": "spec-malformed", "replicas_assignments": {"0": [1, 9]}}', 400),
        (b'{"topic_name": "spec-malformed", "partitions_count": 1, "replicas_assignments": {"0": [1]}}', 400),
        (b'{"topic_name": "spec-malformed", "partitions_count": 0}', 400),
        (b'{"topic_name": "spec-malformed", "replication_factor": 9}', 400),
    ],
)
def test_a_malformed_topic_creation_is_refused_with_the_error_body_and_creates_nothing(
    spec: SpecCaller, raw: bytes, status: int
) -> None:
    spec.error("createKafkaTopic", expect=status, raw=raw)
    spec.error("getKafkaTopic", {"topic_name": "spec-malformed"}, expect=404)


@pytest.mark.parametrize(
    ("name", "raw", "status"),
    [
        ("produceRecord", b"{not json", 400),
        ("produceRecord", b'{"value": {"type": "BINARY", "data": "@@"}}', 400),
        ("produceRecord", b'{"partition_id": "zero"}', 422),
        ("produceRecordsBatch", b'{"entries": "none"}', 422),
        ("produceRecordsBatch", b"[1, 2]", 422),
    ],
)
def test_malformed_records_are_refused_and_append_nothing(
    spec: SpecCaller, cluster: Cluster, prefix: str, name: str, raw: bytes, status: int
) -> None:
    topic = f"spec-{prefix}"
    cluster.create_topic(topic, 1, 3)
    spec.error(name, {"topic_name": topic}, expect=status, raw=raw)
    offsets = spec.call("listKafkaPartitionOffsets", {"topic_name": topic, "partition_id": 0}, expect=200).model
    assert isinstance(offsets, m.PartitionWithOffsetsData) and offsets.latest_offset == 0


KEPT_ACL = {
    "resource_type": "TOPIC",
    "resource_name": "spec-acl",
    "pattern_type": "LITERAL",
    "principal": "User:spec-kept",
    "host": "*",
    "operation": "READ",
    "permission": "ALLOW",
}
REFUSED_ACL = {**KEPT_ACL, "principal": "User:spec-refused"}
ANY_BUT_PERMISSION = {"resource_type": "ANY", "pattern_type": "ANY", "operation": "ANY"}


@pytest.mark.parametrize(
    ("name", "query", "body", "problem"),
    [
        (
            "createKafkaAcls",
            None,
            {**REFUSED_ACL, "resource_type": "CLUSTER", "resource_name": "not-kafka-cluster", "operation": "ALTER"},
            "must be kafka-cluster",
        ),
        ("createKafkaAcls", None, {**REFUSED_ACL, "operation": "FLY"}, "operation"),
        ("createKafkaAcls", None, {**REFUSED_ACL, "operaton": "READ"}, "operaton"),
        ("batchCreateKafkaAcls", None, {"data": [REFUSED_ACL, {**REFUSED_ACL, "permission": "MAYBE"}]}, "permission"),
        ("deleteKafkaAcls", {"resource_name": "spec-acl"}, None, "needs resource_type, pattern_type"),
        ("deleteKafkaAcls", {**ANY_BUT_PERMISSION, "resource_name": "spec-acl"}, None, "needs permission"),
        ("deleteKafkaAcls", {**ANY_BUT_PERMISSION, "permission": "MAYBE"}, None, "permission must be one of"),
    ],
)
def test_a_refused_acl_is_400_with_40002_naming_the_problem_and_changes_nothing(
    spec: SpecCaller, name: str, query: dict | None, body: dict | None, problem: str
) -> None:
    """The spec's 400 with the code of its own refused-ACL example; the ACL in place stays, none is added."""
    spec.call("createKafkaAcls", expect=201, body=KEPT_ACL)
    try:
        refused = spec.error(name, expect=400, query=query, body=body)
        assert refused.error_code == 40002 and problem in (refused.message or ""), refused
        listed = spec.call("getKafkaAcls", expect=200).model
        assert isinstance(listed, m.AclDataList)
        assert [acl.principal for acl in listed.data if acl.principal.startswith("User:spec-")] == ["User:spec-kept"]
    finally:
        spec.call("deleteKafkaAcls", expect=200, query=KEPT_ACL)


def test_a_subscribed_partition_without_a_commit_is_listed_with_null_offsets(
    spec: SpecCaller, cluster: Cluster
) -> None:
    """The ``different`` verdict of the lag rows: the row is there, its current_offset and lag null."""
    cluster.create_topic("spec-uncommitted", 1, 3)
    group = "spec-uncommitted-group"
    status, joined = cluster.v3(
        "POST",
        f"/consumer-groups/{group}/consumers/m:heartbeat",
        {"member_epoch": 0, "subscribed_topics": ["spec-uncommitted"]},
    )
    assert status == 200, joined
    params = {"consumer_group_id": group, "topic_name": "spec-uncommitted", "partition_id": 0}
    with pytest.raises(ValidationError, match="current_offset"):
        spec.call("getKafkaConsumerLag", params, expect=200)
    status, row = cluster.v3("GET", f"/consumer-groups/{group}/lags/spec-uncommitted/partitions/0")
    assert status == 200 and (row["current_offset"], row["lag"], row["consumer_id"]) == (None, None, "m")


def test_a_committed_partition_no_member_owns_has_empty_owner_strings(spec: SpecCaller, cluster: Cluster) -> None:
    """A group that only commits (no members): its rows name no owner, as strings, and the summary links the group's
    members and the partition."""
    cluster.create_topic("spec-unowned", 1, 3)
    group = "spec-unowned-group"
    offsets = {"offsets": [{"topic_name": "spec-unowned", "partition_id": 0, "offset": 0}]}
    status, committed = cluster.v3("POST", f"/consumer-groups/{group}/offsets", offsets)
    assert status == 200, committed
    params = {"consumer_group_id": group, "topic_name": "spec-unowned", "partition_id": 0}
    lag = spec.call("getKafkaConsumerLag", params, expect=200).model
    assert isinstance(lag, m.ConsumerLagData)
    assert (lag.consumer_id, lag.client_id, lag.instance_id, lag.lag) == ("", "", None, 0)
    summary = spec.call("getKafkaConsumerGroupLagSummary", {"consumer_group_id": group}, expect=200).model
    assert isinstance(summary, m.ConsumerGroupLagSummaryData) and summary.max_lag_consumer_id == ""
    assert summary.max_lag_consumer.related.endswith(f"/consumer-groups/{group}/consumers")
    assert summary.max_lag_partition.related.endswith("/topics/spec-unowned/partitions/0")
    described = spec.call("getKafkaConsumerGroup", {"consumer_group_id": group}, expect=200).model
    assert isinstance(described, m.ConsumerGroupData) and (described.state, described.is_simple) == ("EMPTY", True)
