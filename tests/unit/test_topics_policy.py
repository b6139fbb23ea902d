"""Topic policies decided from names and configs alone (``broker.topics.policy``)."""

from __future__ import annotations

import pytest

from broker.errors import InvalidConfig, InvalidTopic
from broker.groups.coordinator import OFFSETS_TOPIC_CONFIGS
from broker.topics.policy import (
    OFFSETS_TOPIC,
    check_client_append,
    check_create_name,
    check_delete,
    check_internal_configs,
    min_reassigned_replicas,
)
from config.topic import TopicDefaults, parse_topic_configs

DEFAULTS = TopicDefaults(retention_ms=3_600_000, retention_bytes=1 << 30).topic_config()


def test_the_offsets_topic_configs_keep_everything_whatever_the_defaults() -> None:
    check_internal_configs(OFFSETS_TOPIC, parse_topic_configs(OFFSETS_TOPIC_CONFIGS, DEFAULTS))


@pytest.mark.parametrize(
    ("change", "config"),
    [
        ({"cleanup.policy": "delete"}, "cleanup.policy"),
        ({"retention.ms": "60000"}, "retention.ms"),
        ({"retention.bytes": "1048576"}, "retention.bytes"),
    ],
)
def test_an_internal_topic_config_that_would_delete_records_is_refused(change: dict[str, str], config: str) -> None:
    resolved = parse_topic_configs({**OFFSETS_TOPIC_CONFIGS, **change}, DEFAULTS)
    with pytest.raises(InvalidConfig) as raised:
        check_internal_configs(OFFSETS_TOPIC, resolved)
    assert raised.value.details["config"] == config
    assert f"invalid config {config}={next(iter(change.values()))} for internal topic" in raised.value.message


def test_internal_names_are_the_brokers_alone() -> None:
    check_create_name(OFFSETS_TOPIC, internal=True)
    for refuse in (
        lambda: check_create_name(OFFSETS_TOPIC, internal=False),
        lambda: check_client_append(OFFSETS_TOPIC),
        lambda: check_delete(OFFSETS_TOPIC),
    ):
        with pytest.raises(InvalidTopic):
            refuse()
    check_create_name("orders", internal=False)
    check_client_append("orders")
    check_delete("orders")


@pytest.mark.parametrize(
    ("configs", "default", "current", "floor"),
    [
        ({"min.insync.replicas": "2"}, 1, 3, 2),
        ({"min_insync_replicas": "3"}, 1, 3, 3),
        ({}, 2, 3, 2),
        ({}, 2, 1, 1),
        ({"retention.ms": "1000"}, 3, 2, 2),
    ],
)
def test_a_reassignment_keeps_the_topics_own_min_insync_replicas_and_a_default_at_most_the_current_count(
    configs: dict[str, str], default: int, current: int, floor: int
) -> None:
    """The topic's own value binds (creation holds it within the replication factor); a broker-wide default
    binds only up to the partition's current count, so a partition created below it can still move."""
    resolved = parse_topic_configs(configs, TopicDefaults(min_insync_replicas=default).topic_config())
    assert min_reassigned_replicas(configs, resolved, current) == floor
