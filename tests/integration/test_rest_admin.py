"""The admin operations against three real brokers: topic configs, partition growth, replicas, reassignments.

Every alter is sent to one broker and checked through the others, because an alter is
a metadata record the controller writes and every broker applies; the effect checked
is a real one (a produce refused for ``max.message.bytes``), not only the listing. The
broker that took an alter answers once its own view has it; another broker applies it
when its metadata watch delivers it, which the tests wait for, as Kafka's clients must.
The tests share one cluster, none alters a cluster-wide setting, and each makes topics,
groups and ACLs named after itself.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.support.cluster import Cluster, ClusterSpec, cluster_fixture

pytestmark = pytest.mark.integration

cluster = cluster_fixture(ClusterSpec(), scope="module")


def _config(cluster: Cluster, via: int, topic: str, name: str) -> dict[str, Any]:
    reply: dict[str, Any] = cluster.api("GET", f"/topics/{topic}/configs/{name}", via=via)
    return reply


def _wait_everywhere(cluster: Cluster, topic: str, name: str, source: str) -> None:
    """Until every broker's metadata view shows the config with ``source``."""
    for broker_id in cluster.brokers:

        def listed(via: int = broker_id) -> bool:
            return bool(_config(cluster, via, topic, name)["source"] == source)

        cluster.wait_until(listed, f"broker {broker_id} to list {name} of {topic} as {source}", 10.0)


def _produce(cluster: Cluster, via: int, topic: str, partition: int, value: str) -> tuple[int, Any]:
    record = {"partition_id": partition, "value": {"type": "STRING", "data": value}}
    return cluster.v3("POST", f"/topics/{topic}/records?acks=all", record, via=via)


def test_a_config_set_on_one_broker_is_listed_and_enforced_by_every_broker(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-sized"
    cluster.create_topic(topic, 1, 3, via=1)
    before = _config(cluster, 3, topic, "max.message.bytes")
    assert (before["source"], before["is_default"], before["is_read_only"]) == ("DEFAULT_CONFIG", True, False)
    assert before["synonyms"] == [{"name": "message.max.bytes", "value": before["value"], "source": "DEFAULT_CONFIG"}]

    status, reply = cluster.v3("PUT", f"/topics/{topic}/configs/max.message.bytes", {"value": "400"}, via=2)
    assert status == 204, reply
    _wait_everywhere(cluster, topic, "max.message.bytes", "DYNAMIC_TOPIC_CONFIG")
    for broker_id in (1, 2, 3):
        after = _config(cluster, broker_id, topic, "max.message.bytes")
        assert (after["value"], after["source"], after["is_default"]) == ("400", "DYNAMIC_TOPIC_CONFIG", False)
        assert [s["source"] for s in after["synonyms"]] == ["DYNAMIC_TOPIC_CONFIG", "DEFAULT_CONFIG"]
        status, reply = _produce(cluster, broker_id, topic, 0, "x" * 500)
        assert (status, reply["error"]) == (413, "MESSAGE_TOO_LARGE"), reply
    assert _produce(cluster, 1, topic, 0, "small")[0] == 200

    status, reply = cluster.v3("DELETE", f"/topics/{topic}/configs/max.message.bytes", via=3)
    assert status == 204, reply
    _wait_everywhere(cluster, topic, "max.message.bytes", "DEFAULT_CONFIG")
    assert _produce(cluster, 2, topic, 0, "x" * 500)[0] == 200
    assert cluster.read(topic, 0, via=3) == ["small", "x" * 500]


def test_a_batch_alter_is_all_or_nothing_and_validate_only_changes_nothing(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-batched"
    cluster.create_topic(topic, 1, 1, {"compression.type": "gzip"}, via=1)
    alter = f"/topics/{topic}/configs:alter"
    refused = [
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "retention.ms", "value": "-2"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "min.insync.replicas", "value": "2"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "no.such.config", "value": "1"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "compression.type", "value": "brotli"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "max.message.bytes", "operation": "DELETE"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "compression.type", "operation": "SET"}],
    ]
    for data in refused:
        status, reply = cluster.v3("POST", alter, {"data": data}, via=1)
        assert (status, reply["error"]) == (400, "INVALID_CONFIG"), reply
    status, reply = cluster.v3(
        "POST", alter, {"data": [{"name": "max.message.bytes", "value": "5000"}], "validate_only": True}, via=1
    )
    assert status == 204, reply
    assert _config(cluster, 2, topic, "max.message.bytes")["source"] == "DEFAULT_CONFIG"

    data = [{"name": "max.message.bytes", "value": "5000"}, {"name": "compression.type", "operation": "DELETE"}]
    assert cluster.v3("POST", alter, {"data": data}, via=1)[0] == 204
    _wait_everywhere(cluster, topic, "max.message.bytes", "DYNAMIC_TOPIC_CONFIG")
    status, listing = cluster.v3("GET", f"/topics/{topic}/configs", via=2)
    assert status == 200, listing
    by_name = {config["name"]: config for config in listing["data"]}
    assert by_name["max.message.bytes"]["value"] == "5000"
    assert (by_name["compression.type"]["value"], by_name["compression.type"]["source"]) == (
        "producer",
        "DEFAULT_CONFIG",
    )
    assert not any(config["is_read_only"] for config in listing["data"])
    status, everything = cluster.v3("GET", "/topics/-/configs", via=3)
    assert status == 200, everything
    assert {c["name"] for c in everything["data"] if c["topic_name"] == topic} == set(by_name)


def test_a_topic_grows_and_its_new_partitions_take_records_at_once(cluster: Cluster, prefix: str) -> None:
    name = f"{prefix}-growing"
    cluster.create_topic(name, 2, 2, via=1)
    status, topic = cluster.v3("PATCH", f"/topics/{name}", {"partitions_count": 5}, via=2)
    assert status == 200, topic
    assert topic["partitions_count"] == 5
    for partition in (2, 3, 4):
        status, reply = _produce(cluster, 2, name, partition, f"to-{partition}")
        assert status == 200, reply
        assert reply["offset"] == 0
        assert cluster.read(name, partition, via=1) == [f"to-{partition}"]

    status, replicas = cluster.v3("GET", f"/topics/{name}/partitions/4/replicas", via=1)
    assert status == 200, replicas
    assert len(replicas["data"]) == 2
    assert sum(replica["is_leader"] for replica in replicas["data"]) == 1
    assert all(replica["is_in_sync"] for replica in replicas["data"])
    leader = next(replica for replica in replicas["data"] if replica["is_leader"])
    assert leader["log_end_offset"] == 1

    for count in (5, 3):
        status, reply = cluster.v3("PATCH", f"/topics/{name}", {"partitions_count": count}, via=3)
        assert (status, reply["error"]) == (400, "INVALID_PARTITIONS"), reply
    status, unchanged = cluster.v3("GET", f"/topics/{name}", via=1)
    assert unchanged["partitions_count"] == 5


def test_replicas_by_broker_and_the_empty_reassignments(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-placed"
    cluster.create_topic(topic, 3, 2, via=1)
    held = 0
    for broker_id in (1, 2, 3):
        status, replicas = cluster.v3("GET", f"/brokers/{broker_id}/partition-replicas", via=1)
        assert status == 200, replicas
        mine = [r for r in replicas["data"] if r["topic_name"] == topic]
        assert all(r["broker_id"] == broker_id for r in mine)
        held += len(mine)
    assert held == 6
    status, missing = cluster.v3("GET", f"/topics/{topic}/partitions/0/replicas/99", via=1)
    assert status == 404, missing

    status, none = cluster.v3("GET", "/topics/-/partitions/-/reassignment", via=1)
    assert (status, none["data"]) == (200, [])
    status, none = cluster.v3("GET", f"/topics/{topic}/partitions/-/reassignment", via=1)
    assert (status, none["data"]) == (200, [])
    status, error = cluster.v3("GET", f"/topics/{topic}/partitions/0/reassignment", via=1)
    assert status == 404, error
    status, error = cluster.v3("GET", f"/topics/{prefix}-absent/partitions/-/reassignment", via=1)
    assert status == 404, error


def _heartbeat(cluster: Cluster, group: str, member: str, epoch: int, topic: str) -> Any:
    body = {"member_epoch": epoch, "subscribed_topics": [topic], "session_timeout_ms": 30_000}
    status, reply = cluster.v3("POST", f"/consumer-groups/{group}/consumers/{member}:heartbeat", body, via=1)
    assert status == 200, reply
    return reply


def test_a_member_is_assigned_a_grown_topics_new_partitions_and_the_assignment_is_listed(
    cluster: Cluster, prefix: str
) -> None:
    topic, group = f"{prefix}-subscribed", f"{prefix}-readers"
    cluster.create_topic(topic, 1, 1, via=1)
    epoch = _heartbeat(cluster, group, "m1", 0, topic)["member_epoch"]
    status, reply = cluster.v3("PATCH", f"/topics/{topic}", {"partitions_count": 3}, via=2)
    assert status == 200, reply

    def owns_all() -> bool:
        nonlocal epoch
        answer = _heartbeat(cluster, group, "m1", epoch, topic)
        epoch = answer["member_epoch"]
        return answer["assignment"] == [{"topic": topic, "partitions": [0, 1, 2]}]

    cluster.wait_until(owns_all, "the member to be assigned the grown topic's partitions", 10.0)
    for broker_id in (1, 2, 3):
        member = f"/consumer-groups/{group}/consumers/m1"
        status, listing = cluster.v3("GET", f"{member}/assignments", via=broker_id)
        assert status == 200, listing
        assert [(row["topic_name"], row["partition_id"]) for row in listing["data"]] == [
            (topic, 0),
            (topic, 1),
            (topic, 2),
        ]
        status, one = cluster.v3("GET", f"{member}/assignments/{topic}/partitions/2", via=broker_id)
        assert (status, one["partition_id"]) == (200, 2), one
        assert one["partition"]["related"].endswith(f"/topics/{topic}/partitions/2")
    status, error = cluster.v3("GET", f"/consumer-groups/{group}/consumers/m1/assignments/{topic}/partitions/7", via=1)
    assert status == 404, error
    status, error = cluster.v3("GET", f"/consumer-groups/{group}/consumers/nobody/assignments", via=1)
    assert status == 404, error


def test_every_broker_answers_for_every_brokers_configs_and_only_the_throttle_rates_are_its_own(
    cluster: Cluster,
) -> None:
    for broker_id in (1, 2, 3):
        status, listing = cluster.v3("GET", f"/brokers/{broker_id}/configs", via=1)
        assert status == 200, listing
        by_name = {config["name"]: config for config in listing["data"]}
        assert by_name["broker.id"]["value"] == str(broker_id)
        assert {config["broker_id"] for config in listing["data"]} == {broker_id}
        assert {name for name, config in by_name.items() if not config["is_read_only"]} == {
            "leader.replication.throttled.rate",
            "follower.replication.throttled.rate",
        }
        status, one = cluster.v3("GET", f"/brokers/{broker_id}/configs/log.retention.ms", via=1)
        assert (status, one["source"]) == (200, "DEFAULT_CONFIG"), one
        status, error = cluster.v3("PUT", f"/brokers/{broker_id}/configs/log.retention.ms", {"value": "1"}, via=1)
        assert (status, error["error"]) == (400, "INVALID_CONFIG"), error
    status, everything = cluster.v3("GET", "/brokers/-/configs", via=1)
    assert status == 200, everything
    assert sorted(config["value"] for config in everything["data"] if config["name"] == "broker.id") == ["1", "2", "3"]
    assert cluster.v3("GET", "/brokers/9/configs", via=1)[0] == 404
    status, error = cluster.v3("POST", "/brokers/2/configs:alter", {"data": [{"name": "nope", "value": "1"}]}, via=1)
    assert (status, error["error"]) == (400, "INVALID_CONFIG"), error


def _rate(cluster: Cluster, broker_id: int, via: int) -> tuple[str, str]:
    status, config = cluster.v3("GET", f"/brokers/{broker_id}/configs/follower.replication.throttled.rate", via=via)
    assert status == 200, config
    return config["value"], config["source"]


def test_a_throttle_rate_set_for_one_broker_is_that_brokers_alone_and_outranks_the_cluster_wide_one(
    cluster: Cluster,
) -> None:
    unlimited = (str(2**63 - 1), "DEFAULT_CONFIG")
    name = "follower.replication.throttled.rate"
    try:
        status, error = cluster.v3("PUT", f"/brokers/2/configs/{name}", {"value": "-5"}, via=1)
        assert (status, error["error"]) == (400, "INVALID_CONFIG") and name in error["message"], error
        status, error = cluster.v3(
            "POST",
            "/brokers/2/configs:alter",
            {"data": [{"name": name, "value": "2000"}, {"name": "log.retention.ms", "value": "1"}]},
            via=1,
        )
        assert (status, error["error"]) == (400, "INVALID_CONFIG") and "log.retention.ms" in error["message"], error
        assert _rate(cluster, 2, via=1) == unlimited, "a refused batch sets nothing"
        assert cluster.v3("PUT", f"/brokers/2/configs/{name}", {"value": "3000000"}, via=1)[0] == 204
        cluster.wait_until(
            lambda: _rate(cluster, 2, via=3) == ("3000000", "DYNAMIC_BROKER_CONFIG"), "broker 2 to apply its rate", 10
        )
        assert _rate(cluster, 1, via=1) == unlimited and _rate(cluster, 3, via=3) == unlimited
        assert cluster.v3("PUT", f"/brokers/2/configs/{name}", {"value": "7"}, via=2)[0] == 204
        assert _rate(cluster, 2, via=2) == ("7", "DYNAMIC_BROKER_CONFIG")
        assert cluster.v3("PUT", "/brokers/9/configs/" + name, {"value": "7"}, via=1)[0] == 404
    finally:
        assert cluster.v3("DELETE", f"/brokers/2/configs/{name}", via=2)[0] == 204
    assert _rate(cluster, 2, via=2) == unlimited


def _acl(principal: str, resource_type: str, resource_name: str, operation: str) -> dict[str, str]:
    return {
        "resource_type": resource_type,
        "resource_name": resource_name,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission": "ALLOW",
    }


def test_a_batch_of_acls_is_created_whole_or_not_at_all(cluster: Cluster, prefix: str) -> None:
    alice = f"User:{prefix}-alice"
    orders, readers = f"{prefix}-orders", f"{prefix}-readers"
    refused = {"data": [_acl(alice, "TOPIC", orders, "READ"), _acl(alice, "CLUSTER", "not-the-cluster", "ALTER")]}
    status, error = cluster.v3("POST", "/acls:batch", refused, via=1)
    assert (status, error["error_code"]) == (400, 40002), error
    status, listing = cluster.v3("GET", f"/acls?principal={alice}", via=1)
    assert (status, listing["data"]) == (200, []), listing

    batch = {"data": [_acl(alice, "TOPIC", orders, "READ"), _acl(alice, "GROUP", readers, "READ")]}
    status, reply = cluster.v3("POST", "/acls:batch", batch, via=2)
    assert status == 201, reply
    status, listing = cluster.v3("GET", f"/acls?principal={alice}", via=1)
    assert status == 200, listing
    assert sorted((acl["resource_type"], acl["resource_name"]) for acl in listing["data"]) == [
        ("GROUP", readers),
        ("TOPIC", orders),
    ]


def test_alters_sent_to_two_brokers_at_once_are_both_applied(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-contended"
    cluster.create_topic(topic, 1, 1, via=1)
    puts = [
        (2, "max.message.bytes", "7000"),
        (3, "compression.type", "zstd"),
        (1, "unclean.leader.election.enable", "true"),
    ]

    def put(broker_id: int, name: str, value: str) -> int:
        return cluster.v3("PUT", f"/topics/{topic}/configs/{name}", {"value": value}, via=broker_id)[0]

    with ThreadPoolExecutor(len(puts)) as pool:
        assert list(pool.map(lambda args: put(*args), puts)) == [204, 204, 204]
    for _, name, value in puts:
        _wait_everywhere(cluster, topic, name, "DYNAMIC_TOPIC_CONFIG")
        config = _config(cluster, 1, topic, name)
        assert (config["value"], config["source"]) == (value, "DYNAMIC_TOPIC_CONFIG")
