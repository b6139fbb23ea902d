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
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from broker.groups.offsets_records import partition_for_group
from tests.integration.test_groups_membership import GroupApi, Member
from tests.integration.test_security_cluster import ALICE, TOPIC, Secured, basic, secured  # noqa: F401 - the fixture
from tests.support.brokers import BrokerCluster, http_json

OFFSETS_PARTITIONS = 5
V2 = "application/vnd.kafka.v2+json"
JSON_RECORDS = "application/vnd.kafka.json.v2+json"
BINARY_RECORDS = "application/vnd.kafka.binary.v2+json"
RETRIABLE = (421, 503, 504)
RECORDS_PER_PARTITION = 40


def call(
    url: str, method: str, path: str, body: object = None, accept: str = V2, raw: bytes | None = None, content: str = V2
):
    """One v2 request; (status, decoded body or None)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(
        f"{url}{path}", data=data, method=method, headers={"Content-Type": content, "Accept": accept}
    )
    try:
        with urllib.request.urlopen(request, timeout=40) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, json.loads(text) if text else None


def retrying(url: str, method: str, path: str, body: object = None, accept: str = V2, deadline_s: float = 30):
    """Retries what a client retries: the coordinator moving (421/503/504) or unreachable."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            status, answer = call(url, method, path, body, accept)
        except OSError:
            status, answer = 503, None
        if status not in RETRIABLE or time.monotonic() > deadline:
            return status, answer
        time.sleep(0.1)


def v3(cluster: BrokerCluster, url: str, method: str, path: str, body: object = None):
    return retrying(url, method, f"/v3/clusters/{cluster.cluster_id()}{path}", body, "application/json")


def start_cluster(root: Path) -> BrokerCluster:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HIGHWATER_OFFSETS_TOPIC_NUM_PARTITIONS", str(OFFSETS_PARTITIONS))
        patch.setenv("HIGHWATER_REPLICA_LAG_TIME_MAX_MS", "60000")
        return BrokerCluster(root, 3).start()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerCluster]:
    """One cluster for the tests that break no broker: each uses topics and groups of its own (``prefix``)."""
    started = start_cluster(tmp_path_factory.mktemp("v2-consumer"))
    try:
        yield started
    finally:
        started.shutdown()


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[BrokerCluster]:
    """A cluster for one test that kills or pauses a broker."""
    started = start_cluster(tmp_path)
    try:
        yield started
    finally:
        started.shutdown()


def create_topic(cluster: BrokerCluster, name: str, partitions: int) -> None:
    body = {"topic_name": name, "partitions_count": partitions, "replication_factor": 3}
    status, answer = v3(cluster, cluster.any_url(), "POST", "/topics", body)
    assert status == 201, answer


def produce(cluster: BrokerCluster, topic: str, partitions: int, count: int) -> None:
    entries = [{"partition_id": p, "value": {"data": f"{p}-{i}"}} for p in range(partitions) for i in range(count)]
    deadline = time.monotonic() + 10
    while True:
        status, answer = v3(cluster, cluster.any_url(), "POST", f"/topics/{topic}/records:batch", {"entries": entries})
        if status == 207 and not answer["failures"]:
            return
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)


def offsets_leaders(cluster: BrokerCluster) -> dict[int, int]:
    status, answer = v3(cluster, cluster.any_url(), "GET", "/topics/__consumer_offsets/partitions")
    assert status == 200, answer
    return {p["partition_id"]: p["leader_id"] for p in answer["data"]}


def group_coordinated_by(cluster: BrokerCluster, broker_id: int) -> str:
    """A group id whose ``__consumer_offsets`` partition ``broker_id`` leads (the offsets topic must exist)."""
    leaders = offsets_leaders(cluster)
    return next(
        g
        for g in (f"group-{i}" for i in range(1000))
        if leaders[partition_for_group(g, OFFSETS_PARTITIONS)] == broker_id
    )


def create_instance(url: str, group: str, **config) -> str:
    status, answer = retrying(url, "POST", f"/consumers/{group}", {"format": "json", **config})
    assert status == 200, answer
    return answer["base_uri"]


def instance_path(base_uri: str) -> str:
    return base_uri[base_uri.index("/consumers/") :]


def read(url: str, path: str, accept: str = JSON_RECORDS, **query) -> list[dict]:
    suffix = "&".join(f"{k}={v}" for k, v in query.items())
    status, answer = retrying(url, "GET", f"{path}/records?{suffix}", accept=accept)
    assert status == 200, answer
    return answer


def offsets_of(records: list[dict]) -> dict[int, list[int]]:
    seen: dict[int, list[int]] = {}
    for record in records:
        seen.setdefault(record["partition"], []).append(record["offset"])
    return seen


def warm_up(cluster: BrokerCluster) -> None:
    """Creates ``__consumer_offsets`` (the first group call does), so its leaders can be looked up."""
    create_instance(cluster.any_url(), "warm-up")


@pytest.mark.parametrize("creator_coordinates", [True, False], ids=["creator-is-coordinator", "creator-forwards"])
def test_instance_survives_the_broker_that_created_it(own_cluster: BrokerCluster, creator_coordinates: bool) -> None:
    create_topic(own_cluster, "orders", 2)
    produce(own_cluster, "orders", 2, RECORDS_PER_PARTITION)
    warm_up(own_cluster)
    creator, reader, survivor = (own_cluster.brokers[i] for i in (1, 2, 3))
    group = group_coordinated_by(own_cluster, 1 if creator_coordinates else 2)
    base_uri = create_instance(creator.url, group, **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"})
    assert base_uri == f"{creator.url}/consumers/{group}/instances/{base_uri.rsplit('/', 1)[1]}"
    path = instance_path(base_uri)
    status, _ = retrying(reader.url, "POST", f"{path}/subscription", {"topics": ["orders"]})
    assert status == 204

    status, _ = call(reader.url, "HEAD", f"{path}/records", accept=JSON_RECORDS)
    assert status == 200
    first = read(reader.url, path, max_bytes=100)
    assert first[0]["offset"] == 0, "a HEAD consumed nothing"
    assert all(r["value"] == f"{r['partition']}-{r['offset']}" for r in first)
    status, _ = retrying(reader.url, "POST", f"{path}/offsets")
    assert status == 204
    committed_at = {p: max(offsets) + 1 for p, offsets in offsets_of(first).items()}
    status, answer = retrying(
        reader.url, "GET", f"{path}/offsets", {"partitions": [{"topic": "orders", "partition": p} for p in (0, 1)]}
    )
    assert status == 200, answer
    assert {o["partition"]: o["offset"] for o in answer["offsets"]} == {p: committed_at.get(p, 0) for p in (0, 1)}, (
        "every position is committed: after the records read, or the log start of a partition max_bytes left unread"
    )
    uncommitted = read(reader.url, path, max_bytes=100)
    assert uncommitted, "a second read goes on past the first"

    creator.kill()
    expected = {p: set(range(committed_at.get(p, 0), RECORDS_PER_PARTITION)) for p in (0, 1)}
    before_kill = offsets_of(uncommitted)
    after: list[dict] = []
    deadline = time.monotonic() + 60
    while any(set(before_kill.get(p, [])) | set(offsets_of(after).get(p, [])) != expected[p] for p in (0, 1)):
        assert time.monotonic() < deadline, (offsets_of(after), expected)
        after += read(survivor.url, path)
    for partition, offsets in offsets_of(after).items():
        assert offsets == list(range(offsets[0], RECORDS_PER_PARTITION)), "in order, none skipped or repeated"
        assert offsets[0] >= committed_at.get(partition, 0), "nothing before the committed offset again"


def test_concurrent_reads_never_return_the_same_record(cluster: BrokerCluster, prefix: str) -> None:
    topic = f"{prefix}-shared"
    create_topic(cluster, topic, 1)
    produce(cluster, topic, 1, RECORDS_PER_PARTITION)
    base_uri = create_instance(cluster.brokers[1].url, f"{prefix}-racers", **{"auto.offset.reset": "earliest"})
    path = instance_path(base_uri)
    status, _ = retrying(
        cluster.brokers[2].url, "POST", f"{path}/assignments", {"partitions": [{"topic": topic, "partition": 0}]}
    )
    assert status == 204
    results: list[list[dict]] = [[], []]

    def reader(index: int) -> None:
        url = cluster.brokers[2 + index].url
        for _ in range(5):
            results[index] += read(url, path, max_bytes=60)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    offsets = [r["offset"] for r in results[0] + results[1]]
    assert len(offsets) == len(set(offsets)), sorted(offsets)
    assert sorted(offsets) == list(range(len(offsets))), "the two readers together read a prefix, nothing skipped"
    status, answer = retrying(
        cluster.brokers[1].url, "GET", f"{path}/offsets", {"partitions": [{"topic": topic, "partition": 0}]}
    )
    assert (status, answer["offsets"][0]["offset"]) == (200, len(offsets)), "auto-commit committed what was returned"


def test_latest_is_resolved_once_so_records_after_an_empty_read_are_not_skipped(
    cluster: BrokerCluster, prefix: str
) -> None:
    topic = f"{prefix}-fresh"
    create_topic(cluster, topic, 1)
    produce(cluster, topic, 1, 3)
    path = instance_path(create_instance(cluster.brokers[1].url, f"{prefix}-tailers", **{"auto.commit.enable": False}))
    partition = {"partitions": [{"topic": topic, "partition": 0}]}
    assert retrying(cluster.brokers[2].url, "POST", f"{path}/assignments", partition)[0] == 204
    assert read(cluster.brokers[3].url, path, timeout=0) == [], "latest: the three old records are not read"
    produce(cluster, topic, 1, 2)
    records = read(cluster.brokers[2].url, path, timeout=5000)
    assert [r["offset"] for r in records] == [3, 4]


def test_a_rest_instance_and_a_library_member_share_the_group(cluster: BrokerCluster, prefix: str) -> None:
    topic, group = f"{prefix}-split", f"{prefix}-mixed"
    create_topic(cluster, topic, 2)
    api = GroupApi(cluster)
    base_uri = create_instance(cluster.brokers[1].url, group, name="rest")
    path = instance_path(base_uri)
    assert retrying(cluster.brokers[2].url, "POST", f"{path}/subscription", {"topics": [topic]})[0] == 204

    def rest_owned() -> set[tuple[str, int]]:
        status, answer = retrying(cluster.brokers[3].url, "GET", f"{path}/assignments")
        assert status == 200, answer
        return {(p["topic"], p["partition"]) for p in answer["partitions"]}

    assert rest_owned() == {(topic, 0), (topic, 1)}
    member = Member(api, group, "library", [topic], cluster.brokers[3].url)
    deadline = time.monotonic() + 20
    while not (member.owned and len(rest_owned()) == 1):
        assert time.monotonic() < deadline, (member.owned, rest_owned())
        member.beat()
        time.sleep(0.1)
    assert member.owned | rest_owned() == {(topic, 0), (topic, 1)}
    assert not member.owned & rest_owned(), "no partition has two owners"

    assert retrying(cluster.brokers[2].url, "DELETE", path)[0] == 204
    while member.owned != {(topic, 0), (topic, 1)}:
        assert time.monotonic() < deadline + 20, member.owned
        member.beat()
        time.sleep(0.1)


def test_reads_stop_at_the_high_watermark(own_cluster: BrokerCluster) -> None:
    create_topic(own_cluster, "held", 1)
    produce(own_cluster, "held", 1, 5)
    status, described = v3(own_cluster, own_cluster.any_url(), "GET", "/topics/held/partitions/0")
    leader = described["leader_id"]
    follower = next(b for i, b in own_cluster.brokers.items() if i != leader)
    other = next(b for i, b in own_cluster.brokers.items() if i not in (leader, follower.node_id))
    warm_up(own_cluster)
    config = {"auto.offset.reset": "earliest", "auto.commit.enable": False}
    base_uri = create_instance(other.url, group_coordinated_by(own_cluster, other.node_id), **config)
    path = instance_path(base_uri)
    status, _ = retrying(other.url, "POST", f"{path}/assignments", {"partitions": [{"topic": "held", "partition": 0}]})
    assert status == 204
    follower.pause()
    try:
        for i in range(5):
            status, answer = v3(
                own_cluster,
                own_cluster.brokers[leader].url,
                "POST",
                "/topics/held/records?acks=1",
                {"partition_id": 0, "value": {"data": f"above-{i}"}},
            )
            assert status == 200, answer
        status, before = v3(own_cluster, other.url, "GET", "/topics/held/partitions/0")
        records = read(other.url, path, timeout=0)
        status, after = v3(own_cluster, other.url, "GET", "/topics/held/partitions/0")
    finally:
        follower.resume()
    assert before["high_watermark"] == after["high_watermark"] == 5, (before, after)
    assert [r["offset"] for r in records] == list(range(5))
    assert all(not str(r["value"]).startswith("above") for r in records)


def test_bad_input_gets_confluents_errors_and_changes_nothing(cluster: BrokerCluster, prefix: str) -> None:
    topic, group = f"{prefix}-known", f"{prefix}-strict"
    create_topic(cluster, topic, 2)
    url = cluster.brokers[1].url
    base_uri = create_instance(url, group, name="one", **{"auto.offset.reset": "earliest"})
    path = instance_path(base_uri)
    assignment = {"partitions": [{"topic": topic, "partition": 0}]}
    assert retrying(url, "POST", f"{path}/assignments", assignment)[0] == 204

    def refused(status: int, code: int, *args, **kwargs) -> None:
        got, answer = retrying(*args, **kwargs)
        assert (got, answer and answer.get("error_code")) == (status, code), answer
        assert answer["message"]

    other = cluster.brokers[2].url
    refused(409, 40902, other, "POST", f"/consumers/{group}", {"name": "one"})
    refused(404, 40403, other, "GET", f"/consumers/{group}/instances/nobody/assignments")
    refused(404, 40403, other, "GET", f"/consumers/{prefix}-no-such-group/instances/one/records")
    refused(422, 42204, other, "POST", f"/consumers/{group}", {"name": "two", "format": "avro"})
    refused(
        404, 40401, other, "POST", f"{path}/assignments", {"partitions": [{"topic": f"{prefix}-nope", "partition": 0}]}
    )
    refused(404, 40402, other, "POST", f"{path}/assignments", {"partitions": [{"topic": topic, "partition": 9}]})
    refused(409, 40903, other, "POST", f"{path}/subscription", {"topics": [topic]})
    refused(
        416, 41601, other, "POST", f"{path}/positions", {"offsets": [{"topic": topic, "partition": 0, "offset": 99}]}
    )
    refused(
        409, 40903, other, "POST", f"{path}/positions", {"offsets": [{"topic": topic, "partition": 1, "offset": 0}]}
    )
    refused(406, 40601, other, "GET", f"{path}/records", accept=BINARY_RECORDS)
    status, answer = call(other, "POST", f"{path}/assignments", raw=b"{not json")
    assert status == 400 and answer["error_code"] == 40001, answer
    status, answer = call(other, "POST", f"{path}/assignments", assignment, content="application/vnd.kafka.avro.v2")
    assert status == 415 and answer["error_code"] == 41501, answer
    status, answer = call(other, "POST", f"{path}/assignments", {"partitions": "all"})
    assert status == 422 and answer["message"], answer

    status, answer = retrying(other, "GET", f"{path}/assignments")
    assert (status, answer) == (200, assignment)
    status, answer = retrying(other, "GET", f"{path}/subscription")
    assert (status, answer) == (200, {"topics": []})
    status, answer = call(other, "GET", f"/consumers/{group}/instances/two/assignments")
    assert status == 404, "the refused create made no instance"

    assert v3(cluster, other, "DELETE", f"/consumer-groups/{group}")[0] == 204
    status, answer = call(url, "GET", f"{path}/assignments")
    assert (status, answer["error_code"]) == (404, 40403), "deleting the group deleted its instances"


def test_idle_instance_expires_and_leaves_the_group(cluster: BrokerCluster, prefix: str) -> None:
    topic, group = f"{prefix}-idle", f"{prefix}-sleepy"
    create_topic(cluster, topic, 1)
    url = cluster.brokers[1].url
    base_uri = create_instance(url, group, name="dozer", **{"consumer.instance.timeout.ms": 1500})
    path = instance_path(base_uri)
    assert retrying(url, "POST", f"{path}/subscription", {"topics": [topic]})[0] == 204
    status, members = v3(cluster, url, "GET", f"/consumer-groups/{group}/consumers")
    assert status == 200 and [m["consumer_id"] for m in members["data"]] == ["dozer"], members
    deadline = time.monotonic() + 30
    while True:
        status, members = v3(cluster, url, "GET", f"/consumer-groups/{group}/consumers")
        if status == 404 or not members["data"]:
            break
        assert time.monotonic() < deadline, "the idle instance was never removed"
        time.sleep(0.2)
    status, answer = call(url, "GET", f"{path}/subscription")
    assert (status, answer["error_code"]) == (404, 40403), answer


def test_v2_calls_are_checked_as_the_caller_on_whichever_broker_coordinates(secured: Secured) -> None:  # noqa: F811
    """The coordinator checks topic READ as the caller, whichever broker forwarded the call (Kafka's consumer ACLs)."""
    mallory = basic("mallory", "mallory-pw")

    def v2(broker_id: int, method: str, path: str, headers: dict[str, str], body: object = None) -> tuple[int, dict]:
        return http_json(
            method,
            f"{secured.url(broker_id)}{path}",
            body,
            context=secured.context,
            headers={**headers, "Content-Type": V2},
        )

    for broker_id in secured.cluster.brokers:
        status, created = v2(broker_id, "POST", "/consumers/billing", ALICE, {"name": f"alice-{broker_id}"})
        assert status == 200, created
        path = instance_path(created["base_uri"])
        status, body = v2(broker_id, "POST", f"{path}/subscription", ALICE, {"topics": ["secret-plans"]})
        assert (status, body["error"]) == (403, "TOPIC_AUTHORIZATION_FAILED"), (broker_id, body)
        status, body = v2(broker_id, "POST", f"{path}/subscription", ALICE, {"topics": [TOPIC]})
        assert status == 204, body
        status, body = v2(broker_id, "GET", f"{path}/subscription", mallory)
        assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED"), (broker_id, body)
        status, body = v2(broker_id, "POST", "/consumers/other", ALICE, {"name": "nope"})
        assert (status, body["error"]) == (403, "GROUP_AUTHORIZATION_FAILED"), (broker_id, body)


MIN_BYTES_VALUE = "v" * 100


def produce_values(cluster: BrokerCluster, topic: str, values: list[str]) -> None:
    """``values`` to partition 0 in one acks=all request (below the HW when answered); retried only
    when nothing was written, so no record is written twice."""
    entries = [{"partition_id": 0, "value": {"type": "STRING", "data": value}} for value in values]
    deadline = time.monotonic() + 10
    while True:
        status, answer = v3(cluster, cluster.any_url(), "POST", f"/topics/{topic}/records:batch", {"entries": entries})
        assert status == 207, answer
        if not answer["failures"]:
            return
        assert len(answer["failures"]) == len(entries) and time.monotonic() < deadline, answer
        time.sleep(0.1)


def high_watermark(cluster: BrokerCluster, topic: str) -> int:
    status, described = v3(cluster, cluster.any_url(), "GET", f"/topics/{topic}/partitions/0")
    assert status == 200, described
    return described["high_watermark"]


def test_fetch_min_bytes_holds_a_read_until_enough_bytes_or_its_timeout(cluster: BrokerCluster, prefix: str) -> None:
    """Order of events, not durations: the read is started before the first step is produced and
    must still be pending once that step is below the HW (it is under ``fetch.min.bytes``); only
    the second step can end it, so it answers both. The unmet read's one timing assertion is a
    lower bound (a broker cannot answer before the timeout it waits out), safe however loaded."""
    gathered, sparse = f"{prefix}-gathered", f"{prefix}-sparse"
    create_topic(cluster, gathered, 1)
    create_topic(cluster, sparse, 1)
    step_one = [f"{MIN_BYTES_VALUE}-{i}" for i in range(3)]
    step_two = [f"{MIN_BYTES_VALUE}-{i}" for i in range(3, 5)]
    min_bytes = sum(len(value) for value in step_one + step_two)
    config = {"auto.offset.reset": "earliest", "fetch.min.bytes": str(min_bytes)}
    path = instance_path(create_instance(cluster.brokers[1].url, f"{prefix}-gatherers", **config))
    assert retrying(cluster.brokers[2].url, "POST", f"{path}/subscription", {"topics": [gathered]})[0] == 204
    deadline = time.monotonic() + 30
    while retrying(cluster.brokers[2].url, "GET", f"{path}/assignments")[1] != {
        "partitions": [{"topic": gathered, "partition": 0}]
    }:
        assert time.monotonic() < deadline, "the subscribed instance was never assigned the partition"
        time.sleep(0.1)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(read, cluster.brokers[3].url, path, timeout=30_000)
        produce_values(cluster, gathered, step_one)
        assert high_watermark(cluster, gathered) >= len(step_one)
        assert not pending.done(), "the first step is readable but under fetch.min.bytes: the read waits on"
        produce_values(cluster, gathered, step_two)
        records = pending.result(timeout=60)
    assert [(r["offset"], r["value"]) for r in records] == list(enumerate(step_one + step_two))
    assert read(cluster.brokers[1].url, path, timeout=0) == [], "the position moved over exactly what was returned"
    status, answer = retrying(
        cluster.brokers[2].url, "GET", f"{path}/offsets", {"partitions": [{"topic": gathered, "partition": 0}]}
    )
    assert (status, answer["offsets"][0]["offset"]) == (200, 5), "auto-commit committed what was returned"

    produce_values(cluster, sparse, step_one)
    config = {**config, "consumer.request.timeout.ms": "2000"}
    unmet = instance_path(create_instance(cluster.brokers[2].url, f"{prefix}-unmet", **config))
    partition = {"partitions": [{"topic": sparse, "partition": 0}]}
    assert retrying(cluster.brokers[3].url, "POST", f"{unmet}/assignments", partition)[0] == 204
    started = time.monotonic()
    records = read(cluster.brokers[1].url, unmet)
    assert time.monotonic() - started >= 2.0, "the instance's consumer.request.timeout.ms was waited out"
    assert [(r["offset"], r["value"]) for r in records] == list(enumerate(step_one)), "answered with what it had"
