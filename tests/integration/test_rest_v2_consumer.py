"""The REST Proxy v2 consumer API on a real three-broker cluster.

Instances are created on one broker and used through the others: their state lives with
the group's coordinator, so a broker's death (the creator's, or the coordinator's) loses
no instance, and reads go on from the committed offset with nothing skipped past it.

The tests that break no broker share one cluster, each in topics and groups named after
the test; a test that kills or pauses a broker starts a cluster of its own.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aiohttp
import pytest

from broker.groups.offsets_records import partition_for_group
from tests.integration.group_members import Member, group_call
from tests.support.cluster import STEADY_SETTINGS, Cluster, ClusterSpec, cluster_fixture

OFFSETS_PARTITIONS = 5
V2 = "application/vnd.kafka.v2+json"
JSON_RECORDS = "application/vnd.kafka.json.v2+json"
BINARY_RECORDS = "application/vnd.kafka.binary.v2+json"
RETRIABLE = (421, 503, 504)
RECORDS_PER_PARTITION = 40

SPEC = ClusterSpec(settings={"offsets_topic_num_partitions": OFFSETS_PARTITIONS, "replica_lag_time_max_ms": 60000})
STEADY = ClusterSpec(
    settings={**STEADY_SETTINGS, "offsets_topic_num_partitions": OFFSETS_PARTITIONS, "replica_lag_time_max_ms": 60000}
)
"""A follower paused for the length of a test stays registered and in the ISR, holding the high watermark."""

cluster = cluster_fixture(SPEC, scope="module")
own_cluster = cluster_fixture(SPEC)
"""A cluster for one test that kills a broker."""
steady_cluster = cluster_fixture(STEADY)
"""A cluster for one test that pauses a follower."""

ALICE_PASSWORD = "alice-pw-2"
MALLORY_PASSWORD = "mallory-pw"
TOPIC = "orders-eu"
secured = cluster_fixture(ClusterSpec(security=True, tls=True), scope="module")


def call(
    cluster: Cluster,
    via: int,
    method: str,
    path: str,
    body: object = None,
    accept: str = V2,
    raw: bytes | None = None,
    content: str = V2,
) -> tuple[int, Any]:
    """One v2 request to broker ``via``; (status, decoded body or None)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(
        f"{cluster.url(via)}{path}", data=data, method=method, headers={"Content-Type": content, "Accept": accept}
    )
    try:
        with urllib.request.urlopen(request, timeout=40) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text else None


def retrying(
    cluster: Cluster, via: int, method: str, path: str, body: object = None, accept: str = V2
) -> tuple[int, Any]:
    """Asked again while a client asks again: the coordinator moving (421/503/504) or the broker unreachable."""

    def answered() -> tuple[int, Any] | None:
        status, answer = call(cluster, via, method, path, body, accept)
        return None if status in RETRIABLE else (status, answer)

    return cluster.wait_until(answered, f"{method} {path} on broker {via} answered without {RETRIABLE}")


def produce(cluster: Cluster, topic: str, partitions: int, count: int) -> None:
    entries = [{"partition_id": p, "value": {"data": f"{p}-{i}"}} for p in range(partitions) for i in range(count)]
    status, answer = cluster.v3("POST", f"/topics/{topic}/records:batch", {"entries": entries})
    assert status == 207 and not answer["failures"], answer


def group_coordinated_by(cluster: Cluster, broker_id: int) -> str:
    """A group id whose ``__consumer_offsets`` partition ``broker_id`` leads (the offsets topic must exist)."""
    leaders = {p: state.leader_id for p, state in cluster.partitions("__consumer_offsets").items()}
    return next(
        g
        for g in (f"group-{i}" for i in range(1000))
        if leaders[partition_for_group(g, OFFSETS_PARTITIONS)] == broker_id
    )


def create_instance(cluster: Cluster, via: int, group: str, **config: object) -> str:
    status, answer = retrying(cluster, via, "POST", f"/consumers/{group}", {"format": "json", **config})
    assert status == 200, answer
    return str(answer["base_uri"])


def instance_path(base_uri: str) -> str:
    return base_uri[base_uri.index("/consumers/") :]


def read(cluster: Cluster, via: int, path: str, accept: str = JSON_RECORDS, **query: object) -> list[dict[str, Any]]:
    suffix = "&".join(f"{k}={v}" for k, v in query.items())
    status, answer = retrying(cluster, via, "GET", f"{path}/records?{suffix}", accept=accept)
    assert status == 200, answer
    records: list[dict[str, Any]] = answer
    return records


def offsets_of(records: list[dict[str, Any]]) -> dict[int, list[int]]:
    seen: dict[int, list[int]] = {}
    for record in records:
        seen.setdefault(record["partition"], []).append(record["offset"])
    return seen


def warm_up(cluster: Cluster) -> None:
    """Creates ``__consumer_offsets`` (the first group call does), so its leaders can be looked up."""
    create_instance(cluster, 1, "warm-up")
    cluster.wait_for_topic("__consumer_offsets", OFFSETS_PARTITIONS)


@pytest.mark.parametrize("creator_coordinates", [True, False], ids=["creator-is-coordinator", "creator-forwards"])
def test_instance_survives_the_broker_that_created_it(own_cluster: Cluster, creator_coordinates: bool) -> None:
    cluster = own_cluster
    cluster.create_topic("orders", 2)
    produce(cluster, "orders", 2, RECORDS_PER_PARTITION)
    warm_up(cluster)
    creator, reader, survivor = 1, 2, 3
    group = group_coordinated_by(cluster, 1 if creator_coordinates else 2)
    config = {"auto.offset.reset": "earliest", "auto.commit.enable": "false"}
    base_uri = create_instance(cluster, creator, group, **config)
    assert base_uri == f"{cluster.url(creator)}/consumers/{group}/instances/{base_uri.rsplit('/', 1)[1]}"
    path = instance_path(base_uri)
    status, _ = retrying(cluster, reader, "POST", f"{path}/subscription", {"topics": ["orders"]})
    assert status == 204

    status, _ = call(cluster, reader, "HEAD", f"{path}/records", accept=JSON_RECORDS)
    assert status == 200
    first = read(cluster, reader, path, max_bytes=100)
    assert first[0]["offset"] == 0, "a HEAD consumed nothing"
    assert all(r["value"] == f"{r['partition']}-{r['offset']}" for r in first)
    status, _ = retrying(cluster, reader, "POST", f"{path}/offsets")
    assert status == 204
    committed_at = {p: max(offsets) + 1 for p, offsets in offsets_of(first).items()}
    status, answer = retrying(
        cluster, reader, "GET", f"{path}/offsets", {"partitions": [{"topic": "orders", "partition": p} for p in (0, 1)]}
    )
    assert status == 200, answer
    assert {o["partition"]: o["offset"] for o in answer["offsets"]} == {p: committed_at.get(p, 0) for p in (0, 1)}, (
        "every position is committed: after the records read, or the log start of a partition max_bytes left unread"
    )
    uncommitted = read(cluster, reader, path, max_bytes=100)
    assert uncommitted, "a second read goes on past the first"

    cluster.brokers[creator].kill()
    expected = {p: set(range(committed_at.get(p, 0), RECORDS_PER_PARTITION)) for p in (0, 1)}
    before_kill = offsets_of(uncommitted)
    after: list[dict[str, Any]] = []

    def read_to_the_end() -> bool:
        after.extend(read(cluster, survivor, path))
        seen = offsets_of(after)
        return all(set(before_kill.get(p, [])) | set(seen.get(p, [])) == expected[p] for p in (0, 1))

    cluster.wait_until(read_to_the_end, f"every uncommitted offset of {expected} read through the survivor", 60)
    for partition, offsets in offsets_of(after).items():
        assert offsets == list(range(offsets[0], RECORDS_PER_PARTITION)), "in order, none skipped or repeated"
        assert offsets[0] >= committed_at.get(partition, 0), "nothing before the committed offset again"


def test_concurrent_reads_never_return_the_same_record(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-shared"
    cluster.create_topic(topic)
    produce(cluster, topic, 1, RECORDS_PER_PARTITION)
    path = instance_path(create_instance(cluster, 1, f"{prefix}-racers", **{"auto.offset.reset": "earliest"}))
    status, _ = retrying(cluster, 2, "POST", f"{path}/assignments", {"partitions": [{"topic": topic, "partition": 0}]})
    assert status == 204
    results: list[list[dict[str, Any]]] = [[], []]

    def reader(index: int) -> None:
        for _ in range(5):
            results[index] += read(cluster, 2 + index, path, max_bytes=60)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    offsets = [r["offset"] for r in results[0] + results[1]]
    assert len(offsets) == len(set(offsets)), sorted(offsets)
    assert sorted(offsets) == list(range(len(offsets))), "the two readers together read a prefix, nothing skipped"
    status, answer = retrying(cluster, 1, "GET", f"{path}/offsets", {"partitions": [{"topic": topic, "partition": 0}]})
    assert (status, answer["offsets"][0]["offset"]) == (200, len(offsets)), "auto-commit committed what was returned"


def test_latest_is_resolved_once_so_records_after_an_empty_read_are_not_skipped(cluster: Cluster, prefix: str) -> None:
    topic = f"{prefix}-fresh"
    cluster.create_topic(topic)
    produce(cluster, topic, 1, 3)
    path = instance_path(create_instance(cluster, 1, f"{prefix}-tailers", **{"auto.commit.enable": False}))
    partition = {"partitions": [{"topic": topic, "partition": 0}]}
    assert retrying(cluster, 2, "POST", f"{path}/assignments", partition)[0] == 204
    assert read(cluster, 3, path, timeout=0) == [], "latest: the three old records are not read"
    produce(cluster, topic, 1, 2)
    records = read(cluster, 2, path, timeout=5000)
    assert [r["offset"] for r in records] == [3, 4]


def test_a_rest_instance_and_a_library_member_share_the_group(cluster: Cluster, prefix: str) -> None:
    topic, group = f"{prefix}-split", f"{prefix}-mixed"
    cluster.create_topic(topic, 2)
    path = instance_path(create_instance(cluster, 1, group, name="rest"))
    assert retrying(cluster, 2, "POST", f"{path}/subscription", {"topics": [topic]})[0] == 204

    def rest_owned() -> set[tuple[str, int]]:
        status, answer = retrying(cluster, 3, "GET", f"{path}/assignments")
        assert status == 200, answer
        return {(p["topic"], p["partition"]) for p in answer["partitions"]}

    assert rest_owned() == {(topic, 0), (topic, 1)}
    member = Member(cluster, group, "library", [topic], 3)
    started = time.monotonic()

    def shared() -> bool:
        member.beat()
        return bool(member.owned) and len(rest_owned()) == 1

    cluster.wait_until(shared, "the library member and the REST instance to own a partition each", 20)
    assert member.owned | rest_owned() == {(topic, 0), (topic, 1)}
    assert not member.owned & rest_owned(), "no partition has two owners"

    assert retrying(cluster, 2, "DELETE", path)[0] == 204

    def took_over() -> bool:
        member.beat()
        return member.owned == {(topic, 0), (topic, 1)}

    remaining_s = started + 40 - time.monotonic()
    cluster.wait_until(took_over, "the library member to own both partitions once the instance left", remaining_s)


def test_reads_stop_at_the_high_watermark(steady_cluster: Cluster) -> None:
    cluster = steady_cluster
    (state,) = cluster.create_topic("held").values()
    produce(cluster, "held", 1, 5)
    leader = state.leader_id
    follower = next(i for i in cluster.brokers if i != leader)
    other = next(i for i in cluster.brokers if i not in (leader, follower))
    warm_up(cluster)
    config = {"auto.offset.reset": "earliest", "auto.commit.enable": False}
    path = instance_path(create_instance(cluster, other, group_coordinated_by(cluster, other), **config))
    status, _ = retrying(
        cluster, other, "POST", f"{path}/assignments", {"partitions": [{"topic": "held", "partition": 0}]}
    )
    assert status == 204
    cluster.brokers[follower].pause()
    try:
        for i in range(5):
            status, answer = group_call(
                cluster,
                "POST",
                "/topics/held/records?acks=1",
                {"partition_id": 0, "value": {"data": f"above-{i}"}},
                via=leader,
            )
            assert status == 200, answer
        status, before = group_call(cluster, "GET", "/topics/held/partitions/0", via=other)
        records = read(cluster, other, path, timeout=0)
        status, after = group_call(cluster, "GET", "/topics/held/partitions/0", via=other)
    finally:
        cluster.brokers[follower].resume()
    assert before["high_watermark"] == after["high_watermark"] == 5, (before, after)
    assert [r["offset"] for r in records] == list(range(5))
    assert all(not str(r["value"]).startswith("above") for r in records)


def test_bad_input_gets_confluents_errors_and_changes_nothing(cluster: Cluster, prefix: str) -> None:
    topic, group = f"{prefix}-known", f"{prefix}-strict"
    cluster.create_topic(topic, 2)
    path = instance_path(create_instance(cluster, 1, group, name="one", **{"auto.offset.reset": "earliest"}))
    assignment = {"partitions": [{"topic": topic, "partition": 0}]}
    assert retrying(cluster, 1, "POST", f"{path}/assignments", assignment)[0] == 204

    def refused(status: int, code: int, method: str, route: str, body: object = None, accept: str = V2) -> None:
        got, answer = retrying(cluster, 2, method, route, body, accept)
        assert (got, answer and answer.get("error_code")) == (status, code), answer
        assert answer["message"]

    refused(409, 40902, "POST", f"/consumers/{group}", {"name": "one"})
    refused(404, 40403, "GET", f"/consumers/{group}/instances/nobody/assignments")
    refused(404, 40403, "GET", f"/consumers/{prefix}-no-such-group/instances/one/records")
    refused(422, 42204, "POST", f"/consumers/{group}", {"name": "two", "format": "avro"})
    refused(404, 40401, "POST", f"{path}/assignments", {"partitions": [{"topic": f"{prefix}-nope", "partition": 0}]})
    refused(404, 40402, "POST", f"{path}/assignments", {"partitions": [{"topic": topic, "partition": 9}]})
    refused(409, 40903, "POST", f"{path}/subscription", {"topics": [topic]})
    refused(416, 41601, "POST", f"{path}/positions", {"offsets": [{"topic": topic, "partition": 0, "offset": 99}]})
    refused(409, 40903, "POST", f"{path}/positions", {"offsets": [{"topic": topic, "partition": 1, "offset": 0}]})
    refused(406, 40601, "GET", f"{path}/records", accept=BINARY_RECORDS)
    status, answer = call(cluster, 2, "POST", f"{path}/assignments", raw=b"{not json")
    assert status == 400 and answer["error_code"] == 40001, answer
    status, answer = call(
        cluster, 2, "POST", f"{path}/assignments", assignment, content="application/vnd.kafka.avro.v2"
    )
    assert status == 415 and answer["error_code"] == 41501, answer
    status, answer = call(cluster, 2, "POST", f"{path}/assignments", {"partitions": "all"})
    assert status == 422 and answer["message"], answer

    status, answer = retrying(cluster, 2, "GET", f"{path}/assignments")
    assert (status, answer) == (200, assignment)
    status, answer = retrying(cluster, 2, "GET", f"{path}/subscription")
    assert (status, answer) == (200, {"topics": []})
    status, answer = call(cluster, 2, "GET", f"/consumers/{group}/instances/two/assignments")
    assert status == 404, "the refused create made no instance"

    assert group_call(cluster, "DELETE", f"/consumer-groups/{group}", via=2)[0] == 204
    status, answer = call(cluster, 1, "GET", f"{path}/assignments")
    assert (status, answer["error_code"]) == (404, 40403), "deleting the group deleted its instances"


def test_idle_instance_expires_and_leaves_the_group(cluster: Cluster, prefix: str) -> None:
    topic, group = f"{prefix}-idle", f"{prefix}-sleepy"
    cluster.create_topic(topic)
    path = instance_path(create_instance(cluster, 1, group, name="dozer", **{"consumer.instance.timeout.ms": 1500}))
    assert retrying(cluster, 1, "POST", f"{path}/subscription", {"topics": [topic]})[0] == 204
    status, members = group_call(cluster, "GET", f"/consumer-groups/{group}/consumers", via=1)
    assert status == 200 and [m["consumer_id"] for m in members["data"]] == ["dozer"], members

    def removed() -> bool:
        status, members = group_call(cluster, "GET", f"/consumer-groups/{group}/consumers", via=1)
        return status == 404 or not members["data"]

    cluster.wait_until(removed, "the idle instance to be removed from its group", 30)
    status, answer = call(cluster, 1, "GET", f"{path}/subscription")
    assert (status, answer["error_code"]) == (404, 40403), answer


def basic(username: str, password: str) -> dict[str, str]:
    return {"Authorization": aiohttp.encode_basic_auth(username, password)}


def _allow(principal: str, resource_type: str, name: str, operation: str, pattern: str = "LITERAL") -> dict[str, str]:
    return {
        "resource_type": resource_type,
        "resource_name": name,
        "pattern_type": pattern,
        "principal": principal,
        "operation": operation,
        "permission": "ALLOW",
    }


def test_v2_calls_are_checked_as_the_caller_on_whichever_broker_coordinates(secured: Cluster) -> None:
    """The coordinator checks topic READ as the caller, whichever broker forwarded the call (Kafka's consumer ACLs).

    Alice may READ the ``orders-`` topics and the ``billing`` group; mallory may do nothing."""
    cluster = secured
    for user, password in (("alice", ALICE_PASSWORD), ("mallory", MALLORY_PASSWORD)):
        cluster.api("POST", "/users", {"name": user, "password": password})
    for acl in (
        _allow("User:alice", "TOPIC", "orders-", "WRITE", "PREFIXED"),
        _allow("User:alice", "TOPIC", "orders-", "READ", "PREFIXED"),
        _allow("User:alice", "GROUP", "billing", "READ"),
    ):
        cluster.api("POST", "/acls", acl)
    cluster.create_topic(TOPIC)
    cluster.create_topic("secret-plans")
    alice, mallory = basic("alice", ALICE_PASSWORD), basic("mallory", MALLORY_PASSWORD)
    for broker_id in cluster.brokers:

        def describable(via: int = broker_id) -> bool:
            return cluster.v3("GET", f"/topics/{TOPIC}", via=via, headers=alice)[0] == 200

        cluster.wait_until(describable, f"broker {broker_id} to know alice and her ACLs")

    def v2(broker_id: int, method: str, path: str, headers: dict[str, str], body: object = None) -> tuple[int, Any]:
        return cluster.http(method, path, body, via=broker_id, headers={**headers, "Content-Type": V2})

    for broker_id in cluster.brokers:
        status, created = v2(broker_id, "POST", "/consumers/billing", alice, {"name": f"alice-{broker_id}"})
        assert status == 200, created
        path = instance_path(created["base_uri"])
        status, body = v2(broker_id, "POST", f"{path}/subscription", alice, {"topics": ["secret-plans"]})
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED"), (broker_id, body)
        status, body = v2(broker_id, "POST", f"{path}/subscription", alice, {"topics": [TOPIC]})
        assert status == 204, body
        status, body = v2(broker_id, "GET", f"{path}/subscription", mallory)
        assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED"), (broker_id, body)
        status, body = v2(broker_id, "POST", "/consumers/other", alice, {"name": "nope"})
        assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED"), (broker_id, body)


MIN_BYTES_VALUE = "v" * 100


def produce_values(cluster: Cluster, topic: str, values: list[str]) -> None:
    """``values`` to partition 0 in one acks=all request (below the HW when answered)."""
    status, answer = cluster.produce(topic, values)
    assert status == 207 and not answer["failures"], answer


def high_watermark(cluster: Cluster, topic: str) -> int:
    return cluster.partitions(topic)[0].high_watermark


def test_fetch_min_bytes_holds_a_read_until_enough_bytes_or_its_timeout(cluster: Cluster, prefix: str) -> None:
    """Order of events, not durations: the read is started before the first step is produced and
    must still be pending once that step is below the HW (it is under ``fetch.min.bytes``); only
    the second step can end it, so it answers both. The unmet read's one timing assertion is a
    lower bound (a broker cannot answer before the timeout it waits out), safe however loaded."""
    gathered, sparse = f"{prefix}-gathered", f"{prefix}-sparse"
    cluster.create_topic(gathered)
    cluster.create_topic(sparse)
    step_one = [f"{MIN_BYTES_VALUE}-{i}" for i in range(3)]
    step_two = [f"{MIN_BYTES_VALUE}-{i}" for i in range(3, 5)]
    min_bytes = sum(len(value) for value in step_one + step_two)
    config = {"auto.offset.reset": "earliest", "fetch.min.bytes": str(min_bytes)}
    path = instance_path(create_instance(cluster, 1, f"{prefix}-gatherers", **config))
    assert retrying(cluster, 2, "POST", f"{path}/subscription", {"topics": [gathered]})[0] == 204
    assigned = {"partitions": [{"topic": gathered, "partition": 0}]}
    cluster.wait_until(
        lambda: retrying(cluster, 2, "GET", f"{path}/assignments")[1] == assigned,
        "the subscribed instance to be assigned the partition",
    )

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(read, cluster, 3, path, timeout=30_000)
        produce_values(cluster, gathered, step_one)
        assert high_watermark(cluster, gathered) >= len(step_one)
        assert not pending.done(), "the first step is readable but under fetch.min.bytes: the read waits on"
        produce_values(cluster, gathered, step_two)
        records = pending.result(timeout=60)
    assert [(r["offset"], r["value"]) for r in records] == list(enumerate(step_one + step_two))
    assert read(cluster, 1, path, timeout=0) == [], "the position moved over exactly what was returned"
    status, answer = retrying(
        cluster, 2, "GET", f"{path}/offsets", {"partitions": [{"topic": gathered, "partition": 0}]}
    )
    assert (status, answer["offsets"][0]["offset"]) == (200, 5), "auto-commit committed what was returned"

    produce_values(cluster, sparse, step_one)
    config = {**config, "consumer.request.timeout.ms": "2000"}
    unmet = instance_path(create_instance(cluster, 2, f"{prefix}-unmet", **config))
    partition = {"partitions": [{"topic": sparse, "partition": 0}]}
    assert retrying(cluster, 3, "POST", f"{unmet}/assignments", partition)[0] == 204
    started = time.monotonic()
    records = read(cluster, 1, unmet)
    assert time.monotonic() - started >= 2.0, "the instance's consumer.request.timeout.ms was waited out"
    assert [(r["offset"], r["value"]) for r in records] == list(enumerate(step_one)), "answered with what it had"
