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

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.brokers import BrokerCluster, http_json
from tests.support.replication import start_cluster, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerCluster]:
    """One cluster for the module: each test uses topics, groups and ACLs of its own (``prefix``)."""
    started = start_cluster(tmp_path_factory.mktemp("rest-admin"))
    try:
        yield started
    finally:
        started.shutdown()


def _base(cluster: BrokerCluster, broker_id: int) -> str:
    return f"{cluster.brokers[broker_id].url}/v3/clusters/{cluster.cluster_id()}"


def _create(base: str, name: str, partitions: int, replication_factor: int, **configs: str) -> None:
    body = {
        "topic_name": name,
        "partitions_count": partitions,
        "replication_factor": replication_factor,
        "configs": [{"name": key, "value": value} for key, value in configs.items()],
    }
    status, reply = http_json("POST", f"{base}/topics", body)
    assert status == 201, reply


def _config(base: str, topic: str, name: str) -> dict:
    status, reply = http_json("GET", f"{base}/topics/{topic}/configs/{name}")
    assert status == 200, reply
    return reply


def _wait_everywhere(cluster: BrokerCluster, topic: str, name: str, source: str) -> None:
    """Until every broker's metadata view shows the config with ``source``."""
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: _config(_base(cluster, b), topic, name)["source"] == source,
            10.0,
            f"broker {broker_id} to list {name} of {topic} as {source}",
        )


def _produce(base: str, topic: str, partition: int, value: str) -> tuple[int, dict]:
    record = {"partition_id": partition, "value": {"type": "STRING", "data": value}}
    return http_json("POST", f"{base}/topics/{topic}/records?acks=all", record)


def _values(base: str, topic: str, partition: int) -> list[str]:
    status, reply = http_json("GET", f"{base}/topics/{topic}/partitions/{partition}/records?offset=0&format=string")
    assert status == 200, reply
    return [record["value"]["data"] for record in reply["data"]]


def test_a_config_set_on_one_broker_is_listed_and_enforced_by_every_broker(cluster: BrokerCluster, prefix: str) -> None:
    topic = f"{prefix}-sized"
    _create(_base(cluster, 1), topic, 1, 3)
    before = _config(_base(cluster, 3), topic, "max.message.bytes")
    assert (before["source"], before["is_default"], before["is_read_only"]) == ("DEFAULT_CONFIG", True, False)
    assert before["synonyms"] == [{"name": "message.max.bytes", "value": before["value"], "source": "DEFAULT_CONFIG"}]

    status, reply = http_json("PUT", f"{_base(cluster, 2)}/topics/{topic}/configs/max.message.bytes", {"value": "400"})
    assert status == 204, reply
    _wait_everywhere(cluster, topic, "max.message.bytes", "DYNAMIC_TOPIC_CONFIG")
    for broker_id in (1, 2, 3):
        after = _config(_base(cluster, broker_id), topic, "max.message.bytes")
        assert (after["value"], after["source"], after["is_default"]) == ("400", "DYNAMIC_TOPIC_CONFIG", False)
        assert [s["source"] for s in after["synonyms"]] == ["DYNAMIC_TOPIC_CONFIG", "DEFAULT_CONFIG"]
        status, reply = _produce(_base(cluster, broker_id), topic, 0, "x" * 500)
        assert (status, reply["error"]) == (413, "MESSAGE_TOO_LARGE"), reply
    assert _produce(_base(cluster, 1), topic, 0, "small")[0] == 200

    status, reply = http_json("DELETE", f"{_base(cluster, 3)}/topics/{topic}/configs/max.message.bytes")
    assert status == 204, reply
    _wait_everywhere(cluster, topic, "max.message.bytes", "DEFAULT_CONFIG")
    assert _produce(_base(cluster, 2), topic, 0, "x" * 500)[0] == 200
    assert _values(_base(cluster, 3), topic, 0) == ["small", "x" * 500]


def test_a_batch_alter_is_all_or_nothing_and_validate_only_changes_nothing(cluster: BrokerCluster, prefix: str) -> None:
    base = _base(cluster, 1)
    topic = f"{prefix}-batched"
    _create(base, topic, 1, 1, **{"compression.type": "gzip"})
    alter = f"{base}/topics/{topic}/configs:alter"
    refused = [
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "retention.ms", "value": "-2"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "min.insync.replicas", "value": "2"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "no.such.config", "value": "1"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "compression.type", "value": "brotli"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "max.message.bytes", "operation": "DELETE"}],
        [{"name": "max.message.bytes", "value": "5000"}, {"name": "compression.type", "operation": "SET"}],
    ]
    for data in refused:
        status, reply = http_json("POST", alter, {"data": data})
        assert (status, reply["error"]) == (400, "INVALID_CONFIG"), reply
    status, reply = http_json(
        "POST", alter, {"data": [{"name": "max.message.bytes", "value": "5000"}], "validate_only": True}
    )
    assert status == 204, reply
    assert _config(_base(cluster, 2), topic, "max.message.bytes")["source"] == "DEFAULT_CONFIG"

    data = [{"name": "max.message.bytes", "value": "5000"}, {"name": "compression.type", "operation": "DELETE"}]
    assert http_json("POST", alter, {"data": data})[0] == 204
    _wait_everywhere(cluster, topic, "max.message.bytes", "DYNAMIC_TOPIC_CONFIG")
    status, listing = http_json("GET", f"{_base(cluster, 2)}/topics/{topic}/configs")
    assert status == 200, listing
    by_name = {config["name"]: config for config in listing["data"]}
    assert by_name["max.message.bytes"]["value"] == "5000"
    assert (by_name["compression.type"]["value"], by_name["compression.type"]["source"]) == (
        "producer",
        "DEFAULT_CONFIG",
    )
    assert not any(config["is_read_only"] for config in listing["data"])
    status, everything = http_json("GET", f"{_base(cluster, 3)}/topics/-/configs")
    assert status == 200, everything
    assert {c["name"] for c in everything["data"] if c["topic_name"] == topic} == set(by_name)


def test_a_topic_grows_and_its_new_partitions_take_records_at_once(cluster: BrokerCluster, prefix: str) -> None:
    name = f"{prefix}-growing"
    _create(_base(cluster, 1), name, 2, 2)
    status, topic = http_json("PATCH", f"{_base(cluster, 2)}/topics/{name}", {"partitions_count": 5})
    assert status == 200, topic
    assert topic["partitions_count"] == 5
    for partition in (2, 3, 4):
        status, reply = _produce(_base(cluster, 2), name, partition, f"to-{partition}")
        assert status == 200, reply
        assert reply["offset"] == 0
        assert _values(_base(cluster, 1), name, partition) == [f"to-{partition}"]

    status, replicas = http_json("GET", f"{_base(cluster, 1)}/topics/{name}/partitions/4/replicas")
    assert status == 200, replicas
    assert len(replicas["data"]) == 2
    assert sum(replica["is_leader"] for replica in replicas["data"]) == 1
    assert all(replica["is_in_sync"] for replica in replicas["data"])
    leader = next(replica for replica in replicas["data"] if replica["is_leader"])
    assert leader["log_end_offset"] == 1

    for count in (5, 3):
        status, reply = http_json("PATCH", f"{_base(cluster, 3)}/topics/{name}", {"partitions_count": count})
        assert (status, reply["error"]) == (400, "INVALID_PARTITIONS"), reply
    status, unchanged = http_json("GET", f"{_base(cluster, 1)}/topics/{name}")
    assert unchanged["partitions_count"] == 5


def test_replicas_by_broker_and_the_empty_reassignments(cluster: BrokerCluster, prefix: str) -> None:
    base = _base(cluster, 1)
    topic = f"{prefix}-placed"
    _create(base, topic, 3, 2)
    held = 0
    for broker_id in (1, 2, 3):
        status, replicas = http_json("GET", f"{base}/brokers/{broker_id}/partition-replicas")
        assert status == 200, replicas
        mine = [r for r in replicas["data"] if r["topic_name"] == topic]
        assert all(r["broker_id"] == broker_id for r in mine)
        held += len(mine)
    assert held == 6
    status, missing = http_json("GET", f"{base}/topics/{topic}/partitions/0/replicas/99")
    assert status == 404, missing

    status, none = http_json("GET", f"{base}/topics/-/partitions/-/reassignment")
    assert (status, none["data"]) == (200, [])
    status, none = http_json("GET", f"{base}/topics/{topic}/partitions/-/reassignment")
    assert (status, none["data"]) == (200, [])
    status, error = http_json("GET", f"{base}/topics/{topic}/partitions/0/reassignment")
    assert status == 404, error
    status, error = http_json("GET", f"{base}/topics/{prefix}-absent/partitions/-/reassignment")
    assert status == 404, error


def _heartbeat(base: str, group: str, member: str, epoch: int, topic: str) -> dict:
    body = {"member_epoch": epoch, "subscribed_topics": [topic], "session_timeout_ms": 30_000}
    status, reply = http_json("POST", f"{base}/consumer-groups/{group}/consumers/{member}:heartbeat", body)
    assert status == 200, reply
    return reply


def test_a_member_is_assigned_a_grown_topics_new_partitions_and_the_assignment_is_listed(
    cluster: BrokerCluster, prefix: str
) -> None:
    base = _base(cluster, 1)
    topic, group = f"{prefix}-subscribed", f"{prefix}-readers"
    _create(base, topic, 1, 1)
    epoch = _heartbeat(base, group, "m1", 0, topic)["member_epoch"]
    status, reply = http_json("PATCH", f"{_base(cluster, 2)}/topics/{topic}", {"partitions_count": 3})
    assert status == 200, reply

    def owns_all() -> bool:
        nonlocal epoch
        answer = _heartbeat(base, group, "m1", epoch, topic)
        epoch = answer["member_epoch"]
        return answer["assignment"] == [{"topic": topic, "partitions": [0, 1, 2]}]

    wait_until(owns_all, 10.0, "the member to be assigned the grown topic's partitions")
    for broker_id in (1, 2, 3):
        member = f"{_base(cluster, broker_id)}/consumer-groups/{group}/consumers/m1"
        status, listing = http_json("GET", f"{member}/assignments")
        assert status == 200, listing
        assert [(row["topic_name"], row["partition_id"]) for row in listing["data"]] == [
            (topic, 0),
            (topic, 1),
            (topic, 2),
        ]
        status, one = http_json("GET", f"{member}/assignments/{topic}/partitions/2")
        assert (status, one["partition_id"]) == (200, 2), one
        assert one["partition"]["related"].endswith(f"/topics/{topic}/partitions/2")
    status, error = http_json("GET", f"{base}/consumer-groups/{group}/consumers/m1/assignments/{topic}/partitions/7")
    assert status == 404, error
    status, error = http_json("GET", f"{base}/consumer-groups/{group}/consumers/nobody/assignments")
    assert status == 404, error


def test_every_broker_answers_for_every_brokers_configs_and_none_can_be_altered_for_one_broker(
    cluster: BrokerCluster,
) -> None:
    base = _base(cluster, 1)
    for broker_id in (1, 2, 3):
        status, listing = http_json("GET", f"{base}/brokers/{broker_id}/configs")
        assert status == 200, listing
        by_name = {config["name"]: config for config in listing["data"]}
        assert by_name["broker.id"]["value"] == str(broker_id)
        assert {config["broker_id"] for config in listing["data"]} == {broker_id}
        assert all(config["is_read_only"] for config in listing["data"])
        status, one = http_json("GET", f"{base}/brokers/{broker_id}/configs/log.retention.ms")
        assert (status, one["source"]) == (200, "DEFAULT_CONFIG"), one
        status, error = http_json("PUT", f"{base}/brokers/{broker_id}/configs/log.retention.ms", {"value": "1"})
        assert (status, error["error"]) == (400, "INVALID_CONFIG"), error
    status, everything = http_json("GET", f"{base}/brokers/-/configs")
    assert status == 200, everything
    assert sorted(config["value"] for config in everything["data"] if config["name"] == "broker.id") == ["1", "2", "3"]
    assert http_json("GET", f"{base}/brokers/9/configs")[0] == 404
    status, error = http_json("POST", f"{base}/brokers/2/configs:alter", {"data": [{"name": "nope", "value": "1"}]})
    assert (status, error["error"]) == (400, "INVALID_CONFIG"), error


def _acl(principal: str, resource_type: str, resource_name: str, operation: str) -> dict:
    return {
        "resource_type": resource_type,
        "resource_name": resource_name,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission": "ALLOW",
    }


def test_a_batch_of_acls_is_created_whole_or_not_at_all(cluster: BrokerCluster, prefix: str) -> None:
    base = _base(cluster, 1)
    alice = f"User:{prefix}-alice"
    orders, readers = f"{prefix}-orders", f"{prefix}-readers"
    refused = {"data": [_acl(alice, "TOPIC", orders, "READ"), _acl(alice, "CLUSTER", "not-the-cluster", "ALTER")]}
    status, error = http_json("POST", f"{base}/acls:batch", refused)
    assert (status, error["error_code"]) == (400, 40002), error
    status, listing = http_json("GET", f"{base}/acls?principal={alice}")
    assert (status, listing["data"]) == (200, []), listing

    batch = {"data": [_acl(alice, "TOPIC", orders, "READ"), _acl(alice, "GROUP", readers, "READ")]}
    status, reply = http_json("POST", f"{_base(cluster, 2)}/acls:batch", batch)
    assert status == 201, reply
    status, listing = http_json("GET", f"{base}/acls?principal={alice}")
    assert status == 200, listing
    assert sorted((acl["resource_type"], acl["resource_name"]) for acl in listing["data"]) == [
        ("GROUP", readers),
        ("TOPIC", orders),
    ]


def test_alters_sent_to_two_brokers_at_once_are_both_applied(cluster: BrokerCluster, prefix: str) -> None:
    topic = f"{prefix}-contended"
    _create(_base(cluster, 1), topic, 1, 1)
    puts = [
        (2, "max.message.bytes", "7000"),
        (3, "compression.type", "zstd"),
        (1, "unclean.leader.election.enable", "true"),
    ]

    def put(broker_id: int, name: str, value: str) -> int:
        url = f"{_base(cluster, broker_id)}/topics/{topic}/configs/{name}"
        return http_json("PUT", url, {"value": value})[0]

    with ThreadPoolExecutor(len(puts)) as pool:
        assert list(pool.map(lambda args: put(*args), puts)) == [204, 204, 204]
    for _, name, value in puts:
        _wait_everywhere(cluster, topic, name, "DYNAMIC_TOPIC_CONFIG")
        config = _config(_base(cluster, 1), topic, name)
        assert (config["value"], config["source"]) == (value, "DYNAMIC_TOPIC_CONFIG")
