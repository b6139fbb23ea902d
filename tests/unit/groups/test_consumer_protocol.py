"""The topics of a classic consumer's subscription metadata, as kafka-python's encoder writes it (every version)."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription  # type: ignore[import-untyped]

from broker.groups.classic import ClassicGroup, JoinRequest
from broker.groups.consumer_protocol import subscribed_topics


def encoded(topics: list[str], version: int) -> bytes:
    subscription = ConsumerProtocolSubscription(
        topics=topics, user_data=b"opaque", owned_partitions=[], generation_id=3, rack_id="r1", version=version
    )
    return bytes(subscription.encode())


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_version_gives_its_topics(version: int) -> None:
    assert subscribed_topics(encoded(["orders", "payments-é"], version)) == frozenset({"orders", "payments-é"})
    assert subscribed_topics(encoded([], version)) == frozenset()


def test_metadata_that_does_not_read_is_unknown() -> None:
    whole = encoded(["orders"], 1)
    assert subscribed_topics(whole[:9]) is None, "a topic name cut short"
    assert subscribed_topics(b"") is None
    assert subscribed_topics(b"\x00\x00\xff\xff\xff\xff") is None, "a null topic array"
    assert subscribed_topics(b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe") is None, "not UTF-8"


def join(group: ClassicGroup, metadata: bytes, protocol_type: str = "consumer") -> None:
    group.join(JoinRequest("", "client", "127.0.0.1", protocol_type, (("range", metadata),), 6000, 6000), 0)


def test_a_group_subscribes_to_its_members_topics_or_to_everything_when_one_is_unknown() -> None:
    group = ClassicGroup("g")
    assert group.subscribed_topics() == frozenset(), "no members"
    join(group, encoded(["a"], 1))
    join(group, encoded(["b"], 3))
    assert group.subscribed_topics() == frozenset({"a", "b"})
    join(group, b"\x00")
    assert group.subscribed_topics() is None
    connect = ClassicGroup("connect-cluster")
    join(connect, b"worker state", protocol_type="connect")
    assert connect.subscribed_topics() is None, "another protocol: Kafka counts it subscribed to all"
