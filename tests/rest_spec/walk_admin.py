"""The admin part of the conformance walk: configs, replicas, reassignments, partition counts, manual replica
assignments, consumer assignments, ACL batches.

Each step calls the operations as a client would, through ``SpecCaller`` (so every
answer is validated against the spec's model for its status and the operation is ticked
off), and asserts what the table's verdict promises: which configs are read-only, that
an alter of one changes nothing, that a broker's configs come from that broker, that an
operation whose row says it never succeeds answers its documented refusal.
"""

from __future__ import annotations

from tests.rest_spec import models as m
from tests.rest_spec.harness import SpecCaller

INVALID_CONFIG = 40005
THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def _topic_configs(spec: SpecCaller, topic: str) -> dict[str, m.TopicConfigData]:
    listed = spec.call("listKafkaTopicConfigs", {"topic_name": topic}, expect=200).model
    assert isinstance(listed, m.TopicConfigDataList)
    return {config.name: config for config in listed.data}


def walk_topic_configs(spec: SpecCaller, topic: str) -> None:
    """``topic`` was created with ``retention.ms=600000``: a topic config, alterable like every other."""
    configs = _topic_configs(spec, topic)
    assert not [name for name, config in configs.items() if config.is_read_only]
    retention = configs["retention.ms"]
    assert (retention.value, retention.source, retention.is_default) == ("600000", "DYNAMIC_TOPIC_CONFIG", False)
    assert [(s.name, s.source == "DYNAMIC_TOPIC_CONFIG") for s in retention.synonyms] == [
        ("retention.ms", True),
        ("log.retention.ms", False),
    ]
    everything = spec.call("listKafkaAllTopicConfigs", expect=200).model
    assert isinstance(everything, m.TopicConfigDataList)
    assert {c.name for c in everything.data if c.topic_name == topic} == set(configs)

    params = {"topic_name": topic, "name": "compression.type"}
    spec.call("updateKafkaTopicConfig", params, expect=204, body={"value": "zstd"})
    one = spec.call("getKafkaTopicConfig", params, expect=200).model
    assert isinstance(one, m.TopicConfigData) and (one.value, one.source) == ("zstd", "DYNAMIC_TOPIC_CONFIG")
    spec.call("deleteKafkaTopicConfig", params, expect=204)
    reset = spec.call("getKafkaTopicConfig", params, expect=200).model
    assert isinstance(reset, m.TopicConfigData) and (reset.value, reset.is_default) == ("producer", True)

    batch = {"data": [{"name": "max.message.bytes", "value": "9000"}, {"name": "retention.ms", "value": "-2"}]}
    refused = spec.error("updateKafkaTopicConfigBatch", {"topic_name": topic}, expect=400, body=batch)
    assert refused.error_code == INVALID_CONFIG and "retention.ms" in (refused.message or "")
    assert _topic_configs(spec, topic)["max.message.bytes"].value == configs["max.message.bytes"].value
    batch["data"].pop()
    spec.call("updateKafkaTopicConfigBatch", {"topic_name": topic}, expect=204, body=batch)
    assert _topic_configs(spec, topic)["max.message.bytes"].value == "9000"


def walk_broker_configs(spec: SpecCaller, broker_ids: list[int]) -> None:
    """Every broker answers for its own configs (the one called passes the others on); none but the
    replication throttle rates can be altered for one broker (the cluster-wide ones can: ``walk_cluster_configs``)."""
    for broker_id in broker_ids:
        listed = spec.call("listKafkaBrokerConfigs", {"broker_id": broker_id}, expect=200).model
        assert isinstance(listed, m.BrokerConfigDataList) and listed.data
        assert all(c.broker_id == broker_id for c in listed.data)
        assert {c.name for c in listed.data if not c.is_read_only} == set(THROTTLE_RATES)
        params = {"broker_id": broker_id, "name": "broker.id"}
        own_id = spec.call("getKafkaBrokerConfig", params, expect=200).model
        assert isinstance(own_id, m.BrokerConfigData) and own_id.value == str(broker_id)
    everything = spec.call("listKafkaAllBrokerConfigs", expect=200).model
    assert isinstance(everything, m.BrokerConfigDataList)
    assert sorted({c.broker_id for c in everything.data}) == broker_ids

    params = {"broker_id": broker_ids[0], "name": "num.partitions"}
    before = spec.call("getKafkaBrokerConfig", params, expect=200).model
    assert isinstance(before, m.BrokerConfigData)
    put = spec.error("updateKafkaBrokerConfig", params, expect=400, body={"value": "7"})
    reset = spec.error("deleteKafkaBrokerConfig", params, expect=400)
    batch = {"data": [{"name": "num.partitions", "value": "7"}]}
    altered = spec.error("updateKafkaBrokerConfigBatch", {"broker_id": broker_ids[0]}, expect=400, body=batch)
    assert {put.error_code, reset.error_code, altered.error_code} == {INVALID_CONFIG}
    spec.call("updateKafkaBrokerConfigBatch", {"broker_id": broker_ids[0]}, expect=204, body={"data": []})
    rate = {"broker_id": broker_ids[0], "name": THROTTLE_RATES[0]}
    spec.call("updateKafkaBrokerConfig", rate, expect=204, body={"value": "1000000"})
    set_rate = spec.call("getKafkaBrokerConfig", rate, expect=200).model
    assert isinstance(set_rate, m.BrokerConfigData)
    assert (set_rate.value, set_rate.source) == ("1000000", "DYNAMIC_BROKER_CONFIG")
    spec.call("deleteKafkaBrokerConfig", rate, expect=204)
    after = spec.call("getKafkaBrokerConfig", params, expect=200).model
    assert isinstance(after, m.BrokerConfigData) and after.value == before.value


def walk_cluster_configs(spec: SpecCaller) -> None:
    """A cluster-wide dynamic broker config is set, listed, refused when bad, altered in a batch and reset."""
    listed = spec.call("listKafkaClusterConfigs", expect=200).model
    assert isinstance(listed, m.ClusterConfigDataList) and listed.data == []
    params = {"name": "num.partitions"}
    spec.error("getKafkaClusterConfig", params, expect=404)
    spec.call("updateKafkaClusterConfig", params, expect=204, body={"value": "7"})
    one = spec.call("getKafkaClusterConfig", params, expect=200).model
    assert isinstance(one, m.ClusterConfigData)
    assert (one.value, one.source, one.config_type, one.is_read_only) == (
        "7",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "BROKER",
        False,
    )

    bad = {"data": [{"name": "num.partitions", "value": "8"}, {"name": "log.retention.ms", "value": "soon"}]}
    refused = spec.error("updateKafkaClusterConfigs", expect=400, body=bad)
    assert refused.error_code == INVALID_CONFIG and "log.retention.ms" in (refused.message or "")
    not_dynamic = spec.error("updateKafkaClusterConfig", {"name": "broker.id"}, expect=400, body={"value": "9"})
    assert not_dynamic.error_code == INVALID_CONFIG
    dry = {"data": [{"name": "log.retention.ms", "value": "60000"}], "validate_only": True}
    spec.call("updateKafkaClusterConfigs", expect=204, body=dry)
    unchanged = spec.call("listKafkaClusterConfigs", expect=200).model
    assert isinstance(unchanged, m.ClusterConfigDataList)
    assert [(c.name, c.value) for c in unchanged.data] == [("num.partitions", "7")]

    batch = {
        "data": [{"name": "num.partitions", "operation": "DELETE"}, {"name": "log.retention.ms", "value": "600000"}]
    }
    spec.call("updateKafkaClusterConfigs", expect=204, body=batch)
    swapped = spec.call("listKafkaClusterConfigs", expect=200).model
    assert isinstance(swapped, m.ClusterConfigDataList)
    assert [(c.name, c.value) for c in swapped.data] == [("log.retention.ms", "600000")]
    spec.call("deleteKafkaClusterConfig", {"name": "log.retention.ms"}, expect=204)
    after = spec.call("listKafkaClusterConfigs", expect=200).model
    assert isinstance(after, m.ClusterConfigDataList) and after.data == []


def walk_replicas(spec: SpecCaller, topic: str, partitions: int, replication: int) -> None:
    """Every partition of ``topic`` has one leader among its replicas, in sync (the ISR's other members may change
    under load, the leader is always in it), and each replica is among its broker's; no reassignment is under way."""
    held_by: dict[int, set[tuple[str, int]]] = {}
    for partition_id in range(partitions):
        params = {"topic_name": topic, "partition_id": partition_id}
        replicas = spec.call("listKafkaReplicas", params, expect=200).model
        assert isinstance(replicas, m.ReplicaDataList) and len(replicas.data) == replication
        leaders = [r for r in replicas.data if r.is_leader]
        assert len(leaders) == 1 and leaders[0].is_in_sync
        for replica in replicas.data:
            one = spec.call("getKafkaReplica", {**params, "broker_id": replica.broker_id}, expect=200).model
            assert isinstance(one, m.ReplicaData) and one.is_leader == replica.is_leader
            held_by.setdefault(replica.broker_id, set()).add((topic, partition_id))
        spec.error("getKafkaReassignment", params, expect=404)
    for broker_id, expected in held_by.items():
        held = spec.call("searchKafkaReplicasByBroker", {"broker_id": broker_id}, expect=200).model
        assert isinstance(held, m.ReplicaDataList)
        assert {(r.topic_name, r.partition_id) for r in held.data if r.topic_name == topic} == expected
    everywhere = spec.call("listKafkaAllReassignments", expect=200).model
    assert isinstance(everywhere, m.ReassignmentDataList) and everywhere.data == []
    of_topic = spec.call("searchKafkaReassignmentsByTopic", {"topic_name": topic}, expect=200).model
    assert isinstance(of_topic, m.ReassignmentDataList) and of_topic.data == []


def walk_partition_count(spec: SpecCaller, topic: str) -> None:
    """A one-partition topic grows to three; growing to the same count again is refused, nothing changed."""
    spec.call("createKafkaTopic", expect=201, body={"topic_name": topic, "partitions_count": 1})
    grow, three = {"topic_name": topic}, {"partitions_count": 3}
    grown = spec.call("updatePartitionCountKafkaTopic", grow, expect=200, body=three).model
    assert isinstance(grown, m.TopicData) and grown.partitions_count == 3
    refused = spec.error("updatePartitionCountKafkaTopic", grow, expect=400, body=three)
    assert refused.error_code == 40003
    partitions = spec.call("listKafkaPartitions", {"topic_name": topic}, expect=200).model
    assert isinstance(partitions, m.PartitionDataList) and [p.partition_id for p in partitions.data] == [0, 1, 2]
    spec.call("deleteKafkaTopic", {"topic_name": topic}, expect=204)


def walk_manual_assignment(spec: SpecCaller, topic: str) -> None:
    """A topic created with ``replicas_assignments`` (validate-only first) has exactly those replicas, each
    partition led by its first; an assignment naming an unknown broker is 400 with 40002, nothing created."""
    assignments = {"0": [3, 1, 2], "1": [1, 2, 3]}
    dry = {"topic_name": topic, "replicas_assignments": assignments, "validate_only": True}
    would_be = spec.call("createKafkaTopic", expect=200, body=dry).model
    assert isinstance(would_be, m.TopicData) and (would_be.partitions_count, would_be.replication_factor) == (2, 3)
    spec.error("getKafkaTopic", {"topic_name": topic}, expect=404)
    unknown = {"topic_name": topic, "replicas_assignments": {"0": [1, 2, 9]}}
    refused = spec.error("createKafkaTopic", expect=400, body=unknown)
    assert refused.error_code == 40002 and "broker 9" in (refused.message or "")
    spec.error("getKafkaTopic", {"topic_name": topic}, expect=404)

    body = {"topic_name": topic, "replicas_assignments": assignments}
    created = spec.call("createKafkaTopic", expect=201, body=body).model
    assert isinstance(created, m.TopicData) and (created.partitions_count, created.replication_factor) == (2, 3)
    for partition_id, brokers in assignments.items():
        params = {"topic_name": topic, "partition_id": int(partition_id)}
        replicas = spec.call("listKafkaReplicas", params, expect=200).model
        assert isinstance(replicas, m.ReplicaDataList)
        assert sorted(r.broker_id for r in replicas.data) == sorted(brokers)
        assert [r.broker_id for r in replicas.data if r.is_leader] == [brokers[0]]
    spec.call("deleteKafkaTopic", {"topic_name": topic}, expect=204)


def walk_assignments(spec: SpecCaller, group: str, member: str, topic: str, partitions: int) -> None:
    """``member`` is the only member of ``group``, subscribed to ``topic``: it owns every partition."""
    params = {"consumer_group_id": group, "consumer_id": member}
    listed = spec.call("listKafkaConsumerAssignment", params, expect=200).model
    assert isinstance(listed, m.ConsumerAssignmentDataList)
    assert [(a.topic_name, a.partition_id) for a in listed.data] == [(topic, p) for p in range(partitions)]
    one = spec.call("getKafkaConsumerAssignment", {**params, "topic_name": topic, "partition_id": 0}, expect=200).model
    assert isinstance(one, m.ConsumerAssignmentData)
    assert one.lag.related.endswith(f"/consumer-groups/{group}/lags/{topic}/partitions/0")
    absent = {**params, "topic_name": topic, "partition_id": partitions}
    spec.error("getKafkaConsumerAssignment", absent, expect=404)


def walk_acl_batch(spec: SpecCaller, topic: str) -> None:
    """Two ACLs in one batch; a batch with one refused entry creates neither of its entries."""
    acl = {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "host": "*",
        "operation": "WRITE",
        "permission": "ALLOW",
    }
    not_the_cluster = {**acl, "resource_type": "CLUSTER", "resource_name": "not-kafka-cluster", "operation": "ALTER"}
    refused = [{**acl, "principal": "User:carol"}, {**not_the_cluster, "principal": "User:dave"}]
    assert spec.error("batchCreateKafkaAcls", expect=400, body={"data": refused}).error_code == 40002
    assert _principals(spec, topic) == []
    batch = [{**acl, "principal": "User:bob"}, {**acl, "principal": "User:carol"}]
    spec.call("batchCreateKafkaAcls", expect=201, body={"data": batch})
    assert _principals(spec, topic) == ["User:bob", "User:carol"]
    deleted = spec.call("deleteKafkaAcls", expect=200, query={**acl, "principal": "User:bob"}).model
    assert isinstance(deleted, m.DeleteAclsResponse) and len(deleted.data) == 1
    spec.call("deleteKafkaAcls", expect=200, query={**acl, "principal": "User:carol"})


def _principals(spec: SpecCaller, topic: str) -> list[str]:
    found = spec.call("getKafkaAcls", expect=200, query={"resource_name": topic, "operation": "WRITE"}).model
    assert isinstance(found, m.AclDataList)
    return sorted(a.principal for a in found.data)
