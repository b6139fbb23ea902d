"""parse_topic_configs: Kafka-named topic configs from the REST API, accepted or refused clearly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.error_table import error_body
from broker.errors import InvalidConfig
from broker.topics.configs import TopicConfigs
from config.topic import (
    TOPIC_CONFIG_NAMES,
    TopicConfig,
    TopicDefaults,
    parse_topic_configs,
    topic_config_strings,
)

DEFAULTS = TopicDefaults(retention_ms=3_600_000, min_insync_replicas=1)


def test_no_configs_gives_the_defaults() -> None:
    config = parse_topic_configs({}, DEFAULTS)
    assert config == DEFAULTS.topic_config()
    assert config.retention_ms == 3_600_000


def test_kafka_dotted_names_override_defaults() -> None:
    config = parse_topic_configs(
        {
            "retention.ms": "-1",
            "min.insync.replicas": "2",
            "max.message.bytes": "2000000",
            "segment.bytes": "1048576",
            "retention.bytes": "1073741824",
            "cleanup.policy": "delete",
            "flush.policy": "interval",
            "flush.ms": "250",
            "unclean.leader.election.enable": "TRUE",
        },
        DEFAULTS,
    )
    assert config.retention_ms == -1
    assert config.min_insync_replicas == 2
    assert config.max_message_bytes == 2_000_000
    assert config.segment_bytes == 1_048_576
    assert config.retention_bytes == 1_073_741_824
    assert (config.flush_policy, config.flush_interval_ms) == ("interval", 250)
    assert config.unclean_leader_election_enable is True
    assert config.segment_ms == DEFAULTS.segment_ms


def test_field_names_are_accepted_too() -> None:
    assert parse_topic_configs({"retention_ms": " 5000 "}, DEFAULTS).retention_ms == 5000


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"retention.mss": "1"}, "invalid config retention.mss: unknown topic config"),
        ({"retention.ms": "one day"}, "invalid config retention.ms: not an integer (got 'one day')"),
        ({"retention.ms": "1.5"}, "invalid config retention.ms: not an integer (got '1.5')"),
        ({"retention.ms": "-2"}, "invalid config retention.ms: must be >= -1 (got -2)"),
        ({"min.insync.replicas": "0"}, "invalid config min.insync.replicas: must be >= 1 (got 0)"),
        ({"segment.bytes": "100"}, "invalid config segment.bytes: must be >= 1024 (got 100)"),
        ({"segment.bytes": "2147483648"}, "invalid config segment.bytes: must be <= 2147483647 (got 2147483648)"),
        ({"max.message.bytes": "0"}, "invalid config max.message.bytes: must be >= 1 (got 0)"),
        ({"cleanup.policy": "shred"}, "invalid config cleanup.policy: must be one of delete, compact (got 'shred')"),
        ({"flush.policy": "never"}, "invalid config flush.policy: must be one of fsync, interval, os (got 'never')"),
        (
            {"unclean.leader.election.enable": "yes"},
            "invalid config unclean.leader.election.enable: must be true or false (got 'yes')",
        ),
    ],
)
def test_bad_configs_are_refused_naming_the_config(configs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfig) as caught:
        parse_topic_configs(configs, DEFAULTS)
    assert caught.value.message.startswith(message)
    name = next(iter(configs))
    assert error_body(caught.value)["config"] == name
    assert caught.value.http_status == 400


def test_range_error_names_the_dotted_config_among_several() -> None:
    with pytest.raises(InvalidConfig, match=r"^invalid config min\.insync\.replicas: must be >= 1"):
        parse_topic_configs({"retention.ms": "1000", "min.insync.replicas": "-3"}, DEFAULTS)


def test_every_kafka_name_maps_to_a_topic_config_field() -> None:
    assert set(TOPIC_CONFIG_NAMES.values()) == set(TopicConfig.model_fields)


@given(
    retention_ms=st.integers(min_value=-1, max_value=2**62),
    segment_bytes=st.integers(min_value=1024, max_value=2**31 - 1),
    min_insync_replicas=st.integers(min_value=1, max_value=100),
    flush_policy=st.sampled_from(["fsync", "interval", "os"]),
    unclean=st.booleans(),
)
def test_listed_configs_parse_back_to_the_same_config(
    retention_ms: int, segment_bytes: int, min_insync_replicas: int, flush_policy: str, unclean: bool
) -> None:
    config = TopicConfig(
        retention_ms=retention_ms,
        segment_bytes=segment_bytes,
        min_insync_replicas=min_insync_replicas,
        flush_policy=flush_policy,
        unclean_leader_election_enable=unclean,
    )
    assert parse_topic_configs(topic_config_strings(config), TopicDefaults()) == config


def test_the_broker_resolves_each_config_set_once_and_still_refuses_bad_ones() -> None:
    configs = TopicConfigs(DEFAULTS)
    first = configs.parse({"max.message.bytes": "2048"})
    assert first.max_message_bytes == 2048
    assert configs.parse({"max.message.bytes": "2048"}) is first
    assert configs.parse({"max.message.bytes": "4096"}).max_message_bytes == 4096
    for _ in range(2):
        with pytest.raises(InvalidConfig, match=r"max.message.bytes"):
            configs.parse({"max.message.bytes": "-5"})
