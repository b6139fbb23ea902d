"""``UnknownTopics``' bookkeeping: what a poll has to confirm, and the one error it raises.

No request is made here (the client's session opens on first use); confirming against a
real broker is ``tests/clients/test_unknown_topics.py``.
"""

from __future__ import annotations

from broker.client.http import ClusterClient
from broker.client.types import PartitionInfo, TopicPartition
from broker.clock import monotonic_ms
from broker.errors import UnknownPartition, UnknownTopic
from consumer.unknown_topics import NO_SUCH_TOPIC, UnknownTopics, _unknown_error

MISSING = TopicPartition("ordres", 0)


def _tracker(*known_topics: str) -> UnknownTopics:
    client = ClusterClient(["http://127.0.0.1:1"])
    for topic in known_topics:
        client.metadata.update_topic(topic, [PartitionInfo(topic, 0, 1, 0, (1,), (1,), 0, 0, 0)], monotonic_ms())
    return UnknownTopics(client)


def test_nothing_to_confirm_until_a_fetcher_or_a_subscription_suspects_a_topic() -> None:
    unknown = _tracker()
    assert not unknown.suspected
    assert unknown.suspect(MISSING), "news: getmany is woken"
    assert not unknown.suspect(MISSING), "already suspected: no second wake-up"
    assert unknown.suspected
    unknown.found(MISSING)
    assert not unknown.suspected


def test_a_partition_no_longer_assigned_is_no_longer_suspected() -> None:
    unknown = _tracker()
    unknown.suspect(MISSING)
    unknown.assigned([TopicPartition("orders", 0)])
    assert not unknown.suspected


def test_only_subscribed_topics_the_metadata_does_not_know_are_suspected() -> None:
    unknown = _tracker("orders")
    unknown.subscribed(["orders"])
    assert not unknown.suspected, "a known topic costs no request"
    unknown.subscribed(["orders", "ordres"])
    assert unknown.suspected
    unknown.subscribed([])
    assert not unknown.suspected, "a pattern subscription (no named topics) is never checked"


def test_one_error_names_every_missing_topic_and_partition() -> None:
    gone = [TopicPartition("a", 0), TopicPartition("b", 1), TopicPartition("orders", 7)]
    error = _unknown_error(
        ["x", "y"], gone, {"a": NO_SUCH_TOPIC, "b": NO_SUCH_TOPIC, "orders": 3, "x": NO_SUCH_TOPIC, "y": NO_SUCH_TOPIC}
    )
    assert isinstance(error, UnknownTopic)
    assert str(error) == (
        "subscribed topics 'x', 'y' do not exist; assigned topics 'a', 'b' do not exist (a-0, b-1); "
        "assigned partition orders-7 does not exist: topic 'orders' has partitions 0..2"
    )
    assert error.details == {"topics": ["a", "b", "orders", "x", "y"], "partitions": ["a-0", "b-1", "orders-7"]}
    only_partition = _unknown_error([], [TopicPartition("orders", 7)], {"orders": 3})
    assert isinstance(only_partition, UnknownPartition)
