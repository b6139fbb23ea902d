"""The pre-authentication gate, the session a connection starts with, and the per-topic authorization split (pure).

``split`` and ``with_refusals`` are run on real requests of every supported version
(built from kio's classes), and the result is encoded with kio, so a refusal is a
well-formed answer of the version the client asked for.
"""

from __future__ import annotations

import dataclasses

import pytest
from kio.schema.errors import ErrorCode

from broker.kafka import authz
from broker.kafka.apis import APIS, SUPPORTED
from broker.kafka.authn import open_session, served_before_authentication
from broker.kafka.codec import encode_response
from broker.kafka.shapes import NO_THROTTLE, build, shape
from broker.security.principal import ANONYMOUS, Principal
from tests.unit.kafka import requests

SECRET = "secret-plans"
OPEN = "orders"


def allowed(topic: str) -> bool:
    return topic != SECRET


def two_topic_request(api_key: int, version: int) -> object:
    """A request naming OPEN and SECRET, built from the one-topic builders of the handlers' tests."""
    one = {
        0: lambda topic: requests.produce(version, topic, b"batch"),
        1: lambda topic: requests.fetch(version, topic, 0),
        2: lambda topic: requests.list_offsets(version, topic, [-1]),
        23: lambda topic: requests.offset_for_leader_epoch(version, topic, 3),
    }[api_key]
    rule = authz.RULES[api_key]
    first, second = one(OPEN), one(SECRET)
    topics = (*getattr(first, rule.request_topics), *getattr(second, rule.request_topics))
    return dataclasses.replace(first, **{rule.request_topics: topics})


def test_only_api_versions_and_sasl_are_served_before_authentication() -> None:
    assert {key for key in APIS if served_before_authentication(key)} == {17, 18, 36}
    assert not served_before_authentication(0) and not served_before_authentication(-1)


def test_a_connection_starts_with_the_principal_its_mode_gives() -> None:
    assert open_session("none", "h:1", None).principal == ANONYMOUS
    assert open_session("basic", "h:1", "alice").principal is None
    assert open_session("mtls", "h:1", "alice").principal == Principal.user("alice")
    assert open_session("mtls", "h:1", None).principal is None


def test_sasl_versions_are_advertised() -> None:
    assert (SUPPORTED[17].min_version, SUPPORTED[17].max_version) == (0, 1)
    assert (SUPPORTED[36].min_version, SUPPORTED[36].max_version) == (0, 2)


@pytest.mark.parametrize(
    ("api_key", "version"),
    [
        (key, version)
        for key in authz.RULES
        for version in range(SUPPORTED[key].min_version, SUPPORTED[key].max_version + 1)
    ],
)
def test_a_refused_topic_leaves_the_request_and_comes_back_refused(api_key: int, version: int) -> None:
    rule = authz.RULES[api_key]
    asked: list[str] = []

    def allows(topic: str) -> bool:
        asked.append(topic)
        return allowed(topic)

    body, refused = authz.split(rule, two_topic_request(api_key, version), allows)
    assert asked == [OPEN, SECRET]
    assert [getattr(t, rule.request_topic_name) for t in getattr(body, rule.request_topics)] == [OPEN]
    assert refused == [(SECRET, [0])]

    empty = build(
        shape(api_key, version, type(body).__name__.replace("Request", "Response")),
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        **{rule.response_topics: ()},
    )
    answer = authz.with_refusals(rule, api_key, version, empty, refused)
    (topic,) = getattr(answer, rule.response_topics)
    assert getattr(topic, rule.response_topic_name) == SECRET
    (partition,) = getattr(topic, rule.response_partitions)
    assert partition.error_code == ErrorCode.topic_authorization_failed
    assert getattr(partition, rule.response_partition_index) == 0
    assert encode_response(1, answer)


def test_nothing_changes_when_every_topic_is_allowed() -> None:
    request = requests.produce(9, OPEN, b"batch")
    assert authz.split(authz.RULES[0], request, allowed) == (request, [])


@pytest.mark.parametrize("version", range(SUPPORTED[3].min_version, SUPPORTED[3].max_version + 1))
def test_metadata_hides_a_listed_topic_and_refuses_a_named_one(version: int) -> None:
    topic_class = shape(3, version, "MetadataResponseTopic")
    topics = tuple(
        build(topic_class, name=name, error_code=ErrorCode.none, is_internal=False, partitions=(), topic_id=None)
        for name in (OPEN, SECRET)
    )
    response = build(
        shape(3, version, "MetadataResponse"), throttle_time=NO_THROTTLE, brokers=(), cluster_id="c", topics=topics
    )
    listed = authz.metadata_visible(response, listed_all=True, allowed=allowed)
    assert [t.name for t in listed.topics] == [OPEN]
    named = authz.metadata_visible(response, listed_all=False, allowed=allowed)
    assert [(t.name, t.error_code) for t in named.topics] == [
        (OPEN, ErrorCode.none),
        (SECRET, ErrorCode.topic_authorization_failed),
    ]
    assert encode_response(1, named)
