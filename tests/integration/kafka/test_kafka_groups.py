"""Consumer groups of real Kafka clients (classic protocol) against a real 3-broker RF 3 cluster.

confluent-kafka (librdkafka) and kafka-python consumers ``subscribe`` in one group:
partitions split when a second member joins and all come back to one when it leaves;
commits land in ``__consumer_offsets`` and show over HTTP with their lag; a consumer
restarted in the group resumes right after its commit. A group uses one protocol at a
time: a Kafka JoinGroup for a group with HTTP members, and an HTTP heartbeat for a
group with Kafka members, are refused with a message naming the other protocol.

Each consumer polls in its own thread (a consumer's rebalance runs inside its poll, so
two consumers polled from one thread could wait on each other).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer  # type: ignore[import-untyped]
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from tests.integration.kafka.conftest import MIN_ISR_2
from tests.integration.kafka.wire import Connection
from tests.support.cluster import Cluster
from tests.support.waiting import wait_until
from tests.unit.kafka.requests import millis, request_class

pytestmark = pytest.mark.integration

FAST_GROUP = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 200, "max.poll.interval.ms": 20000}


class PollingConsumer:
    """A consumer polled by its own thread; ``assignment`` and ``records`` are read from the test."""

    def __init__(self, poll: Callable[[], list[tuple[str, int, int, bytes]]], assignment: Callable[[], set]) -> None:
        self._poll = poll
        self._assignment = assignment
        self.assignment: frozenset[tuple[str, int]] = frozenset()
        self.records: list[tuple[str, int, int, bytes]] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.records += self._poll()
                self.assignment = frozenset(self._assignment())
            except Exception as error:  # noqa: BLE001 - reported to the test by ``stop``
                self.errors.append(error)
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self.errors, self.errors


def confluent_consumer(cluster: Cluster, group: str, topic: str) -> tuple[Consumer, PollingConsumer]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **FAST_GROUP,
        }
    )
    consumer.subscribe([topic])

    def poll() -> list[tuple[str, int, int, bytes]]:
        message = consumer.poll(0.1)
        if message is None or message.error() is not None:
            return []
        topic, partition, offset, value = message.topic(), message.partition(), message.offset(), message.value()
        assert topic is not None and partition is not None and offset is not None and value is not None
        return [(topic, partition, offset, value)]

    return consumer, PollingConsumer(poll, lambda: {(tp.topic, tp.partition) for tp in consumer.assignment()})


def kafka_python_consumer(cluster: Cluster, group: str, topic: str) -> tuple[KafkaConsumer, PollingConsumer]:
    """A kafka-python member that knows ``topic``'s partitions before its first JoinGroup.

    kafka-python 3.0.12 loses a rebalance it starts because its topic metadata changed
    (a leader that joined before it knew the topic's partitions assigned nothing, then
    learns them) when the JoinGroup/SyncGroup round trip outlives one ``poll`` call: the
    join completes on its network thread, but the next ``poll`` no longer sees a rejoin
    pending, so the assignment is never applied and heartbeats stay off until the
    coordinator expels the member. Polled every 100 ms on a loaded machine, that lost
    the member one run in four; with a 1 ms poll, always. Knowing the partitions first,
    the leader's first assignment is complete and no such rebalance follows.
    """
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=cluster.bootstrap(),
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=200,
        max_poll_interval_ms=20000,
    )
    wait_until(lambda: consumer.partitions_for_topic(topic), f"kafka-python knows {topic}'s partitions", 30)

    def poll() -> list[tuple[str, int, int, bytes]]:
        batches = consumer.poll(timeout_ms=100)
        return [(r.topic, r.partition, r.offset, r.value) for records in batches.values() for r in records]

    return consumer, PollingConsumer(poll, lambda: {(tp.topic, tp.partition) for tp in consumer.assignment()})


@contextmanager
def polled(pair: tuple[Any, PollingConsumer]) -> Iterator[tuple[Any, PollingConsumer]]:
    try:
        yield pair
    finally:
        pair[1].stop()
        pair[0].close()


def produce(cluster: Cluster, topic: str, count: int, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all", "enable.idempotence": False})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(20) == 0


def group_path(group: str, tail: str = "") -> str:
    """The path of ``group`` (and ``tail`` under it) for ``Cluster.v3``."""
    return f"/consumer-groups/{group}{tail}"


def test_librdkafka_and_kafka_python_members_split_partitions_and_get_them_back(kafka_cluster: Cluster) -> None:
    topic, group = "groups-split", "split-group"
    kafka_cluster.create_topic(topic, partitions=4, configs=MIN_ISR_2)
    everything = frozenset((topic, p) for p in range(4))
    with polled(confluent_consumer(kafka_cluster, group, topic)) as (_, first):
        wait_until(lambda: first.assignment == everything, "the only member owns every partition", 30)
        with polled(kafka_python_consumer(kafka_cluster, group, topic)) as (_, second):

            def split() -> bool:
                both = (first.assignment, second.assignment)
                return all(len(a) == 2 for a in both) and first.assignment | second.assignment == everything

            wait_until(split, "two members with two partitions each", 30)
            assert not first.assignment & second.assignment
        wait_until(lambda: first.assignment == everything, "every partition back with the member that stayed", 30)
        status, described = kafka_cluster.v3("GET", group_path(group), timeout_s=10)
        assert status == 200, described
        assert (described["state"], described["members_count"], described["is_simple"]) == ("STABLE", 1, False)
        assert described["partition_assignor"] in ("range", "roundrobin", "cooperative-sticky")


MEMBER_SCRIPT = """
import sys
from kafka import KafkaConsumer  # type: ignore[import-untyped]

bootstrap, group, topic = sys.argv[1:]
consumer = KafkaConsumer(
    topic, bootstrap_servers=bootstrap, group_id=group, session_timeout_ms=6000, heartbeat_interval_ms=200
)
while True:
    consumer.poll(timeout_ms=100)
    print(len(consumer.assignment()), flush=True)
"""


def test_a_killed_member_is_expelled_at_its_session_timeout_and_its_partitions_return(
    kafka_cluster: Cluster, tmp_path: Path
) -> None:
    topic, group = "groups-killed", "killed-group"
    kafka_cluster.create_topic(topic, partitions=2, configs=MIN_ISR_2)
    everything = frozenset((topic, p) for p in range(2))
    script = tmp_path / "member.py"
    script.write_text(MEMBER_SCRIPT)
    with polled(confluent_consumer(kafka_cluster, group, topic)) as (_, survivor):
        wait_until(lambda: survivor.assignment == everything, "the only member owns every partition", 30)
        member = subprocess.Popen(
            [sys.executable, str(script), kafka_cluster.bootstrap(), group, topic],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            output = member.stdout
            assert output is not None
            wait_until(lambda: output.readline().strip() == "1", "the second member owns one partition", 30)
            wait_until(lambda: len(survivor.assignment) == 1, "the first member gave one partition up", 30)
            member.kill()
            member.wait(10)
            wait_until(lambda: survivor.assignment == everything, "the killed member's partition back", 30)
        finally:
            member.kill()
            member.wait(10)


def test_commits_show_over_http_with_lag_and_a_restarted_consumer_resumes_after_them(
    kafka_cluster: Cluster,
) -> None:
    topic, group = "groups-commit", "commit-group"
    kafka_cluster.create_topic(topic, partitions=1, configs=MIN_ISR_2)
    produce(kafka_cluster, topic, 10, 1)
    consumer = Consumer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap(),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            **FAST_GROUP,
        }
    )
    try:
        consumer.subscribe([topic])
        seen: list = []
        deadline = time.monotonic() + 30
        while len(seen) < 6 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                seen.append(message)
        assert [m.offset() for m in seen] == list(range(6))
        committed = consumer.commit(message=seen[-1], asynchronous=False)
        assert [(tp.partition, tp.offset, tp.error) for tp in committed] == [(0, 6, None)]
    finally:
        consumer.close()

    status, offsets = kafka_cluster.v3("GET", group_path(group, "/offsets"), timeout_s=10)
    assert status == 200, offsets
    assert [(e["topic_name"], e["partition_id"], e["offset"]) for e in offsets["data"]] == [(topic, 0, 6)]
    status, lags = kafka_cluster.v3("GET", group_path(group, "/lags"), timeout_s=10)
    assert status == 200, lags
    assert [(e["partition_id"], e["current_offset"], e["log_end_offset"], e["lag"]) for e in lags["data"]] == [
        (0, 6, 10, 4)
    ]

    with polled(kafka_python_consumer(kafka_cluster, group, topic)) as (_, resumed):
        wait_until(lambda: len(resumed.records) >= 4, "the records after the commit", 30)
        assert [offset for _, _, offset, _ in resumed.records] == [6, 7, 8, 9]
        assert [value for _, _, _, value in resumed.records] == [f"v{i}".encode() for i in range(6, 10)]


def call_once(address: str, request: Any) -> Any:
    """``request``'s answer over a raw connection of its own."""
    with closing(Connection(address)) as connection:
        return connection.call(request)


def coordinator_address(cluster: Cluster, group: str) -> str:
    """The Kafka address of the group's coordinator, found with FindCoordinator v3 as clients do."""
    find = request_class(10, 3, "FindCoordinatorRequest")(key=group, key_type=i8(0))

    def found() -> str | None:
        answer = call_once(cluster.bootstrap(1), find)
        return f"{answer.host}:{answer.port}" if answer.error_code == ErrorCode.none else None

    return wait_until(found, "a coordinator", 20)


def join_request(group: str) -> Any:
    protocol = request_class(11, 5, "JoinGroupRequestProtocol")(name="range", metadata=b"\x00\x00")
    return request_class(11, 5, "JoinGroupRequest")(
        group_id=group,
        session_timeout=millis(6000),
        rebalance_timeout=millis(6000),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(protocol,),
    )


def test_a_kafka_join_is_refused_for_a_group_with_http_members(kafka_cluster: Cluster) -> None:
    topic, group = "groups-mixed-http", "mixed-http-first"
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
    status, joined = kafka_cluster.v3(
        "POST",
        group_path(group, "/consumers/http-member:heartbeat"),
        {"member_epoch": 0, "subscribed_topics": [topic]},
        timeout_s=10,
    )
    assert status == 200, joined
    answer = call_once(coordinator_address(kafka_cluster, group), join_request(group))
    assert answer.error_code == ErrorCode.inconsistent_group_protocol


def test_an_http_heartbeat_is_refused_for_a_group_with_kafka_members(kafka_cluster: Cluster) -> None:
    topic, group = "groups-mixed-kafka", "mixed-kafka-first"
    kafka_cluster.create_topic(topic, configs=MIN_ISR_2)
    with polled(confluent_consumer(kafka_cluster, group, topic)) as (_, member):
        wait_until(lambda: member.assignment == {(topic, 0)}, "the Kafka member owns the partition", 30)
        status, refused = kafka_cluster.v3(
            "POST",
            group_path(group, "/consumers/http-member:heartbeat"),
            {"member_epoch": 0, "subscribed_topics": [topic]},
            timeout_s=10,
        )
    assert status == 409, refused
    assert refused["error"] == "NON_EMPTY_GROUP"
    assert "classic group protocol" in refused["message"]


def test_find_coordinator_v0_and_batched_v4_agree_and_other_brokers_answer_not_coordinator(
    kafka_cluster: Cluster,
) -> None:
    group = "find-me"
    address = coordinator_address(kafka_cluster, group)
    v0 = call_once(kafka_cluster.bootstrap(2), request_class(10, 0, "FindCoordinatorRequest")(key=group))
    batched = call_once(
        kafka_cluster.bootstrap(3),
        request_class(10, 4, "FindCoordinatorRequest")(key_type=i8(0), coordinator_keys=(group, "other-group")),
    )
    assert (v0.error_code, f"{v0.host}:{v0.port}") == (ErrorCode.none, address)
    assert [(c.key, c.error_code) for c in batched.coordinators] == [
        (group, ErrorCode.none),
        ("other-group", ErrorCode.none),
    ]
    assert f"{batched.coordinators[0].host}:{batched.coordinators[0].port}" == address
    transactional = call_once(
        kafka_cluster.bootstrap(1), request_class(10, 3, "FindCoordinatorRequest")(key="tx", key_type=i8(1))
    )
    assert (transactional.error_code, f"{transactional.host}:{transactional.port}") in {
        (ErrorCode.none, a) for a in kafka_cluster.kafka_addresses.values()
    }, "key type 1: the transactional id's coordinator"
    unknown = call_once(
        kafka_cluster.bootstrap(1), request_class(10, 3, "FindCoordinatorRequest")(key="tx", key_type=i8(2))
    )
    assert unknown.error_code == ErrorCode.invalid_request
    for other in (a for a in kafka_cluster.kafka_addresses.values() if a != address):
        assert call_once(other, join_request(group)).error_code == ErrorCode.not_coordinator


def test_an_admin_client_lists_and_describes_a_kafka_group_with_its_member(kafka_cluster: Cluster) -> None:
    topic, group = "groups-admin", "admin-described"
    kafka_cluster.create_topic(topic, partitions=2, configs=MIN_ISR_2)
    with polled(confluent_consumer(kafka_cluster, group, topic)) as (_, member):
        wait_until(lambda: len(member.assignment) == 2, "the member owns both partitions", 30)
        admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap()})
        listed = {g.group_id: g for g in admin.list_consumer_groups().result(20).valid}
        assert group in listed
        described = admin.describe_consumer_groups([group])[group].result(20)
        assert described.state.name == "STABLE"
        assert described.partition_assignor == "range"
        [only] = described.members
        assert {(tp.topic, tp.partition) for tp in only.assignment.topic_partitions} == {(topic, 0), (topic, 1)}
