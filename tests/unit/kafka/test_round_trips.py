"""Every supported version of every API, as a client sends it: encoded by kio, routed, answered
by the real handler against a stand-in node, and decoded by kio as the client would decode it.

This pins that no version's response misses a field it needs, that the response header
follows kio's rule, and what each API passes on to the node and gives back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import uuid
from typing import Any, cast

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from structlog.testing import capture_logs

from broker.acks import Acks
from broker.kafka.apis import API_TABLE, SUPPORTED
from broker.kafka.codec import decode_response
from broker.kafka.context import CloseConnection, KafkaNode
from broker.kafka.dispatch import Dispatcher, Routed, route
from broker.kafka.metadata import TOPIC_IDS_ASKED_SINCE
from broker.kafka.shapes import EPOCH, build
from broker.security.acl import AclOperation, ResourceType
from broker.security.authorizer import Authorizer
from tests.unit.kafka import requests
from tests.unit.kafka.stand_in import (
    ABORTED,
    APPEND_TIME_MS,
    BATCH,
    EPOCH_END,
    HIGH_WATERMARK,
    LAST_STABLE_OFFSET,
    LEADER_EPOCH,
    LOG_START,
    OFFSET_AT_TIMESTAMP,
    TOPIC,
    TOPIC_ID,
    OpenSecurity,
    StandInNode,
)
from tests.unit.kafka.test_kauthz import AuthorizingSecurity, allow, denials, signed_in

FETCH_SESSIONS_SINCE = 7
TOPIC_IDS_SINCE = 10
"""Metadata answers topic ids from v10 (KIP-516), and takes topics by id from v12."""


def versions(api_key: int) -> list[int]:
    span = SUPPORTED[api_key]
    return list(range(span.min_version, span.max_version + 1))


def exchange(node: StandInNode, api_key: int, version: int, body: Any, dispatcher: Dispatcher | None = None) -> Any:
    """One request answered; a test that needs state kept between requests (fetch sessions) passes its dispatcher."""
    routed = route(requests.frame(api_key, version, body, correlation_id=4242))
    assert isinstance(routed, Routed)
    # the stand-in is the part of a ``KafkaNode`` these handlers call
    payload, _ = asyncio.run((dispatcher or Dispatcher(cast(KafkaNode, node))).answer(routed))
    if payload is None:
        return None
    correlation_id, response = decode_response(payload, load_response_schema(api_key, version))
    assert correlation_id == 4242
    return response


@pytest.mark.parametrize("version", versions(0))
def test_produce_passes_the_batch_bytes_through_and_answers_offsets(version: int) -> None:
    node = StandInNode()
    response = exchange(node, 0, version, requests.produce(version, TOPIC, BATCH))
    assert node.produced == [(TOPIC, 0, BATCH, Acks.ALL, 1500)]
    [topic] = response.responses
    [part] = topic.partition_responses
    assert (topic.name, part.index, part.error_code, part.base_offset) == (TOPIC, 0, ErrorCode.none, 10)
    assert part.log_append_time == EPOCH + datetime.timedelta(milliseconds=APPEND_TIME_MS)
    if hasattr(part, "log_start_offset"):
        assert part.log_start_offset == LOG_START


@pytest.mark.parametrize(("kafka_acks", "acks"), [(1, Acks.ONE), (-1, Acks.ALL)])
def test_produce_maps_kafka_acks(kafka_acks: int, acks: Acks) -> None:
    node = StandInNode()
    exchange(node, 0, 9, requests.produce(9, TOPIC, BATCH, acks=kafka_acks))
    assert node.produced[0][3] == acks


def test_produce_with_acks_0_appends_and_sends_no_response() -> None:
    node = StandInNode()
    assert exchange(node, 0, 9, requests.produce(9, TOPIC, BATCH, acks=0)) is None
    assert node.produced == [(TOPIC, 0, BATCH, Acks.ZERO, 1500)]


def test_a_failed_acks_0_produce_closes_the_connection_as_kafka_does() -> None:
    with pytest.raises(CloseConnection, match="unknown_topic_or_partition"):
        exchange(StandInNode(), 0, 9, requests.produce(9, "nope", BATCH, acks=0))


def test_produce_with_acks_2_is_refused_per_partition_and_nothing_is_appended() -> None:
    node = StandInNode()
    response = exchange(node, 0, 9, requests.produce(9, TOPIC, BATCH, acks=2))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.invalid_required_acks
    assert node.produced == []


def test_produce_to_an_unknown_topic_answers_its_error_code() -> None:
    response = exchange(StandInNode(), 0, 9, requests.produce(9, "nope", BATCH))
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("version", versions(1))
def test_fetch_returns_the_stored_bytes_with_hw_and_last_stable_offset(version: int) -> None:
    node = StandInNode()
    response = exchange(node, 1, version, requests.fetch(version, TOPIC, 5))
    assert node.fetched == [(TOPIC, 0, 5, 1 << 20, 0)]
    [topic] = response.responses
    [part] = topic.partitions
    assert (part.error_code, part.records, part.high_watermark) == (ErrorCode.none, BATCH, HIGH_WATERMARK)
    assert part.last_stable_offset == HIGH_WATERMARK
    if hasattr(part, "log_start_offset"):
        assert part.log_start_offset == LOG_START


@pytest.mark.parametrize("version", versions(1))
def test_a_read_committed_fetch_stops_at_the_last_stable_offset_and_lists_aborted_transactions(version: int) -> None:
    response = exchange(StandInNode(), 1, version, requests.fetch(version, TOPIC, 5, isolation_level=1))
    [part] = response.responses[0].partitions
    assert (part.high_watermark, part.last_stable_offset) == (HIGH_WATERMARK, LAST_STABLE_OFFSET)
    assert [(txn.producer_id, txn.first_offset) for txn in part.aborted_transactions] == list(ABORTED)


@pytest.mark.parametrize(
    ("epoch", "code"),
    [(LEADER_EPOCH - 1, ErrorCode.fenced_leader_epoch), (LEADER_EPOCH + 1, ErrorCode.unknown_leader_epoch)],
)
def test_fetch_with_another_leader_epoch_is_fenced_without_reading(epoch: int, code: ErrorCode) -> None:
    node = StandInNode()
    response = exchange(node, 1, 12, requests.fetch(12, TOPIC, 5, current_leader_epoch=epoch))
    assert response.responses[0].partitions[0].error_code == code
    assert node.fetched == []


def test_fetch_naming_an_unknown_session_is_told_the_session_does_not_exist() -> None:
    response = exchange(StandInNode(), 1, 12, requests.fetch(12, TOPIC, 5, session_id=99, session_epoch=3))
    assert (response.error_code, response.session_id, response.responses) == (
        ErrorCode.fetch_session_id_not_found,
        0,
        (),
    )


@pytest.mark.parametrize("version", [v for v in versions(1) if v >= FETCH_SESSIONS_SINCE])
def test_a_full_fetch_opens_a_session_that_the_next_fetch_continues(version: int) -> None:
    node = StandInNode()
    dispatcher = Dispatcher(cast(KafkaNode, node))
    opened = exchange(node, 1, version, requests.fetch(version, TOPIC, 5, session_epoch=0), dispatcher)
    assert opened.error_code == ErrorCode.none and opened.session_id != 0
    [[first]] = [t.partitions for t in opened.responses]
    assert first.records == BATCH
    again = exchange(
        node, 1, version, requests.fetch(version, TOPIC, 6, session_id=opened.session_id, session_epoch=1), dispatcher
    )
    assert (again.error_code, again.session_id) == (ErrorCode.none, opened.session_id)
    assert [p.records for t in again.responses for p in t.partitions] == [BATCH], "records are always news"
    stale = exchange(
        node, 1, version, requests.fetch(version, TOPIC, 6, session_id=opened.session_id, session_epoch=1), dispatcher
    )
    assert stale.error_code == ErrorCode.invalid_fetch_session_epoch
    sessionless = exchange(node, 1, version, requests.fetch(version, TOPIC, 6), dispatcher)
    assert (sessionless.error_code, sessionless.session_id) == (ErrorCode.none, 0)


@pytest.mark.parametrize("version", versions(2))
def test_list_offsets_earliest_latest_and_by_timestamp(version: int) -> None:
    response = exchange(StandInNode(), 2, version, requests.list_offsets(version, TOPIC, [-2, -1, 1_000, 2_000]))
    offsets = [(p.error_code, p.offset) for p in response.topics[0].partitions]
    assert offsets == [
        (ErrorCode.none, LOG_START),
        (ErrorCode.none, HIGH_WATERMARK),
        (ErrorCode.none, OFFSET_AT_TIMESTAMP),
        (ErrorCode.none, -1),
    ]


@pytest.mark.parametrize("version", [v for v in versions(2) if v >= 2])
def test_latest_for_a_read_committed_consumer_is_the_last_stable_offset(version: int) -> None:
    """ListOffsets carries ``isolation_level`` from version 2 on."""
    asked = requests.list_offsets(version, TOPIC, [-1], isolation_level=1)
    response = exchange(StandInNode(), 2, version, asked)
    assert [(p.error_code, p.offset) for p in response.topics[0].partitions] == [(ErrorCode.none, LAST_STABLE_OFFSET)]


@pytest.mark.parametrize("version", versions(2))
def test_list_offsets_latest_is_not_available_until_a_new_leaders_hw_reaches_its_epoch_start(version: int) -> None:
    """KIP-207: the previous leader may have answered a higher HW, so "latest" never goes backwards."""
    node = StandInNode(latest_offset_available=False)
    response = exchange(node, 2, version, requests.list_offsets(version, TOPIC, [-2, -1, 1_000, 2_000]))
    offsets = [(p.error_code, p.offset) for p in response.topics[0].partitions]
    assert offsets == [
        (ErrorCode.none, LOG_START),
        (ErrorCode.offset_not_available, -1),
        (ErrorCode.none, OFFSET_AT_TIMESTAMP),
        (ErrorCode.offset_not_available, -1),
    ]


@pytest.mark.parametrize("version", versions(3))
def test_metadata_lists_kafka_brokers_and_partition_state(version: int) -> None:
    response = exchange(StandInNode(), 3, version, requests.metadata(version, [TOPIC, "missing"]))
    assert [(b.node_id, b.host, b.port) for b in response.brokers] == [(1, "127.0.0.1", 19092)]
    found, missing = response.topics
    assert (missing.name, missing.error_code) == ("missing", ErrorCode.unknown_topic_or_partition)
    [part] = found.partitions
    assert (part.leader_id, list(part.replica_nodes), list(part.isr_nodes)) == (1, [1, 2, 3], [1, 2])
    if version >= 1:
        assert response.controller_id == 2
    if version >= 2:
        assert response.cluster_id == "stand-in-cluster"
    if version >= 5:
        assert list(part.offline_replicas) == [3]
    if version >= 7:
        assert part.leader_epoch == LEADER_EPOCH


@pytest.mark.parametrize("version", [v for v in versions(3) if v >= TOPIC_IDS_ASKED_SINCE])
def test_metadata_answers_topic_ids_and_takes_topics_by_id(version: int) -> None:
    topic_class = requests.request_class(3, version, "MetadataRequestTopic")
    unknown = uuid.UUID("7a0c1e52-0000-4000-8000-000000000001")
    asked = (
        build(topic_class, topic_id=None, name=TOPIC),
        *(build(topic_class, topic_id=i, name=None) for i in (TOPIC_ID, unknown)),
    )
    request = dataclasses.replace(requests.metadata(version, []), topics=asked)
    by_name, by_id, nobody = exchange(StandInNode(), 3, version, request).topics
    assert (by_name.name, by_name.topic_id, by_name.error_code) == (TOPIC, TOPIC_ID, ErrorCode.none)
    assert (by_id.name, by_id.topic_id, len(by_id.partitions)) == (TOPIC, TOPIC_ID, 1)
    assert (nobody.name, nobody.topic_id, nobody.error_code) == (None, unknown, ErrorCode.unknown_topic_id)


@pytest.mark.parametrize("version", [v for v in versions(3) if TOPIC_IDS_SINCE <= v < TOPIC_IDS_ASKED_SINCE])
def test_metadata_before_v12_answers_ids_and_refuses_a_topic_without_a_name(version: int) -> None:
    topic_class = requests.request_class(3, version, "MetadataRequestTopic")
    asked = (build(topic_class, topic_id=None, name=TOPIC), build(topic_class, topic_id=TOPIC_ID, name=None))
    request = dataclasses.replace(requests.metadata(version, []), topics=asked)
    by_name, by_id = exchange(StandInNode(), 3, version, request).topics
    assert (by_name.name, by_name.topic_id) == (TOPIC, TOPIC_ID)
    assert (by_id.name, by_id.error_code) == ("", ErrorCode.invalid_request)


@pytest.mark.parametrize("version", versions(3))
def test_metadata_for_all_topics_lists_them(version: int) -> None:
    response = exchange(StandInNode(), 3, version, requests.metadata(version, None))
    assert [t.name for t in response.topics] == [TOPIC]


@pytest.mark.parametrize("version", versions(23))
def test_offset_for_leader_epoch_answers_the_epoch_end(version: int) -> None:
    response = exchange(StandInNode(), 23, version, requests.offset_for_leader_epoch(version, TOPIC, 6))
    [part] = response.topics[0].partitions
    assert (part.error_code, part.leader_epoch, part.end_offset) == (ErrorCode.none, *EPOCH_END)


@pytest.mark.parametrize("version", versions(18))
def test_api_versions_advertises_exactly_the_table(version: int) -> None:
    response = exchange(StandInNode(), 18, version, requests.api_versions(version))
    assert response.error_code == ErrorCode.none
    advertised = {(k.api_key, k.min_version, k.max_version) for k in response.api_keys}
    assert advertised == {(a.key, a.versions.min_version, a.versions.max_version) for a in API_TABLE}


class UnmeteredAuthorizingSecurity(AuthorizingSecurity):
    """The real authorizer's decisions, and no quota (what a Fetch's metering asks)."""

    view = OpenSecurity.view


def test_a_session_partition_whose_topic_may_no_longer_be_read_is_refused_on_the_next_fetch() -> None:
    """Sessions are authorized on every request, as Kafka's: an ACL removed mid-session is felt at once."""
    reader = allow("reader", AclOperation.READ, ResourceType.TOPIC, TOPIC)
    node = StandInNode()
    security = UnmeteredAuthorizingSecurity(Authorizer((reader,)))
    node.security = security
    dispatcher = Dispatcher(cast(KafkaNode, node))
    with signed_in("reader"):
        opened = exchange(node, 1, 12, requests.fetch(12, TOPIC, 5, session_epoch=0), dispatcher)
        assert opened.session_id != 0
        security.authorizer = Authorizer(())
        unnamed = dataclasses.replace(
            requests.fetch(12, TOPIC, 5, session_id=opened.session_id, session_epoch=1), topics=()
        )
        with capture_logs() as logs:
            refused = exchange(node, 1, 12, unnamed, dispatcher)
    [[partition]] = [t.partitions for t in refused.responses]
    assert (partition.error_code, partition.records) == (ErrorCode.topic_authorization_failed, b"")
    assert denials(logs) == [("READ", "TOPIC", TOPIC)]
