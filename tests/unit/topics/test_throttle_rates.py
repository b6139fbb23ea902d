"""The replication throttle rates as configs: Kafka's precedence, their values, and who may set them per broker."""

from __future__ import annotations

import pytest

from broker.errors import InvalidConfig
from broker.topics import cluster_defaults
from broker.topics.throttle_rates import (
    FOLLOWER_RATE,
    LEADER_RATE,
    Layer,
    layers,
    parse_rate,
    per_broker_altered,
    rate_in_force,
)
from config.broker import UNLIMITED_RATE, BrokerSettings
from config.topic import TopicDefaults


def test_per_broker_outranks_cluster_wide_outranks_static_outranks_the_default() -> None:
    static = BrokerSettings(follower_replication_throttled_rate=300)
    assert layers(FOLLOWER_RATE, static, {FOLLOWER_RATE: "200"}, {FOLLOWER_RATE: "100"}) == [
        (100, Layer.PER_BROKER),
        (200, Layer.CLUSTER),
        (300, Layer.STATIC),
    ]
    assert rate_in_force(FOLLOWER_RATE, static, {FOLLOWER_RATE: "200"}, {}) == 200
    assert rate_in_force(FOLLOWER_RATE, static, {}, {}) == 300
    assert layers(LEADER_RATE, static, {}, {}) == [(UNLIMITED_RATE, Layer.DEFAULT)]


@pytest.mark.parametrize("value", ["-1", "1.5", "fast", str(2**63)])
def test_a_rate_is_a_whole_number_of_bytes_per_second_in_a_long(value: str) -> None:
    with pytest.raises(InvalidConfig, match=LEADER_RATE):
        parse_rate(LEADER_RATE, value)


def test_one_broker_may_set_and_remove_only_its_throttle_rates_all_or_nothing() -> None:
    current = {LEADER_RATE: "10"}
    assert per_broker_altered(current, {FOLLOWER_RATE: "20", LEADER_RATE: None}) == {FOLLOWER_RATE: "20"}
    with pytest.raises(InvalidConfig, match=r"log\.retention\.ms cannot be set for one broker"):
        per_broker_altered(current, {FOLLOWER_RATE: "20", "log.retention.ms": "1"})
    assert current == {LEADER_RATE: "10"}


def test_the_cluster_wide_record_holds_the_rates_beside_the_topic_defaults_without_touching_them() -> None:
    configs = cluster_defaults.altered(TopicDefaults(), {}, {FOLLOWER_RATE: "5000", "num.partitions": "4"})
    assert configs == {FOLLOWER_RATE: "5000", "num.partitions": "4"}
    assert cluster_defaults.overlay(TopicDefaults(), configs).partitions == 4
    with pytest.raises(InvalidConfig, match=FOLLOWER_RATE):
        cluster_defaults.altered(TopicDefaults(), configs, {FOLLOWER_RATE: "slow"})
    assert cluster_defaults.altered(TopicDefaults(), configs, {FOLLOWER_RATE: None}) == {"num.partitions": "4"}
