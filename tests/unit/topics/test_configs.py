"""Topic configs as the admin API shows and alters them: sources, synonyms, read-only, all-or-nothing."""

from __future__ import annotations

import pytest

from broker.errors import InvalidConfig
from broker.kafka.config_entries import ConfigSource
from broker.topics.configs import COMPRESSION_TYPES, RUNTIME_TOPIC_CONFIGS, TopicConfigs, canonical_config_name
from config.topic import TOPIC_CONFIG_NAMES, TopicDefaults

BUILT_IN = TopicConfigs(TopicDefaults())


def by_name(configs: TopicConfigs, given: dict[str, str]) -> dict:
    return {entry.name: entry for entry in configs.describe(given)}


def test_every_known_config_and_compression_type_is_listed_once_sorted() -> None:
    names = [entry.name for entry in BUILT_IN.describe({})]
    assert names == sorted({*TOPIC_CONFIG_NAMES, "compression.type"})


def test_an_untouched_config_is_the_built_in_default_with_the_broker_setting_as_synonym() -> None:
    entry = by_name(BUILT_IN, {})["retention.ms"]
    assert (entry.value, entry.source, entry.is_default) == ("604800000", ConfigSource.DEFAULT_CONFIG, True)
    assert [(s.name, s.source) for s in entry.synonyms] == [("log.retention.ms", ConfigSource.DEFAULT_CONFIG)]


def test_a_broker_setting_is_a_static_broker_config_and_a_topic_override_comes_first() -> None:
    configs = TopicConfigs(TopicDefaults(retention_ms=1000))
    untouched = by_name(configs, {})["retention.ms"]
    assert (untouched.value, untouched.source, untouched.is_default) == (
        "1000",
        ConfigSource.STATIC_BROKER_CONFIG,
        False,
    )
    overridden = by_name(configs, {"retention.ms": "5"})["retention.ms"]
    assert (overridden.value, overridden.source) == ("5", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert [(s.name, s.value, s.source) for s in overridden.synonyms] == [
        ("retention.ms", "5", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", "1000", ConfigSource.STATIC_BROKER_CONFIG),
    ]


@pytest.mark.parametrize("value", COMPRESSION_TYPES)
def test_compression_type_takes_kafkas_values(value: str) -> None:
    entry = by_name(BUILT_IN, {"compression.type": value})["compression.type"]
    assert (entry.value, entry.source) == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert [s.source for s in entry.synonyms] == [ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DEFAULT_CONFIG]
    assert "compression.type" not in BUILT_IN.effective({"compression.type": value})


def test_compression_type_defaults_to_producer_and_refuses_other_codecs() -> None:
    entry = by_name(BUILT_IN, {})["compression.type"]
    assert (entry.value, entry.source, entry.is_default) == ("producer", ConfigSource.DEFAULT_CONFIG, True)
    with pytest.raises(InvalidConfig, match=r"compression\.type: must be one of"):
        BUILT_IN.parse({"compression.type": "brotli"})


def test_an_alter_sets_and_resets_and_keeps_the_rest() -> None:
    current = {"retention.ms": "5", "max.message.bytes": "1000"}
    altered = BUILT_IN.altered(current, {"max.message.bytes": None, "compression.type": "lz4"})
    assert altered == {"retention.ms": "5", "compression.type": "lz4"}
    assert current == {"retention.ms": "5", "max.message.bytes": "1000"}


def test_field_spellings_are_stored_under_kafkas_names() -> None:
    altered = BUILT_IN.altered({"retention_ms": "5"}, {"max_message_bytes": "2000"})
    assert altered == {"retention.ms": "5", "max.message.bytes": "2000"}
    assert canonical_config_name("unclean_leader_election_enable") == "unclean.leader.election.enable"


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"max.message.bytes": "2000", "retention.ms": "1"}, "retention.ms"),
        ({"max.message.bytes": "2000", "min.insync.replicas": "2"}, "min.insync.replicas"),
        ({"max.message.bytes": "2000", "no.such": "1"}, "no.such"),
        ({"compression.type": "gzip", "max.message.bytes": "0"}, "max.message.bytes"),
        ({"unclean.leader.election.enable": "maybe"}, "unclean.leader.election.enable"),
    ],
)
def test_one_bad_change_refuses_the_whole_alter_naming_it(changes: dict, named: str) -> None:
    with pytest.raises(InvalidConfig) as refused:
        BUILT_IN.altered({}, changes)
    assert refused.value.details["config"] == named


def test_only_configs_read_at_each_use_are_alterable() -> None:
    assert (
        frozenset({"max.message.bytes", "unclean.leader.election.enable", "compression.type"}) == RUNTIME_TOPIC_CONFIGS
    )
    for name in ("retention.ms", "segment.bytes", "flush.policy", "min.insync.replicas", "cleanup.policy"):
        with pytest.raises(InvalidConfig, match="read-only once a topic exists"):
            BUILT_IN.altered({}, {name: None})
