"""Topic configs as the admin API shows and alters them: sources, synonyms, policies, all-or-nothing."""

from __future__ import annotations

import pytest

from broker.cluster.records import TopicRecord, new_topic_id
from broker.errors import InvalidConfig
from broker.topics.config_entries import ConfigSource
from broker.topics.configs import COMPRESSION_TYPES, TopicConfigs, canonical_config_name
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


def _topic(configs: dict[str, str], replication_factor: int = 3, name: str = "t") -> TopicRecord:
    return TopicRecord(
        name=name, topic_id=new_topic_id(), partitions_count=1, replication_factor=replication_factor, configs=configs
    )


def test_an_alter_sets_and_resets_and_keeps_the_rest() -> None:
    current = {"retention.ms": "5", "max.message.bytes": "1000"}
    altered = BUILT_IN.altered(_topic(current), {"max.message.bytes": None, "compression.type": "lz4"})
    assert altered == {"retention.ms": "5", "compression.type": "lz4"}
    assert current == {"retention.ms": "5", "max.message.bytes": "1000"}


def test_field_spellings_are_stored_under_kafkas_names() -> None:
    altered = BUILT_IN.altered(_topic({"retention_ms": "5"}), {"max_message_bytes": "2000"})
    assert altered == {"retention.ms": "5", "max.message.bytes": "2000"}
    assert canonical_config_name("unclean_leader_election_enable") == "unclean.leader.election.enable"


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"max.message.bytes": "2000", "retention.ms": "-2"}, "retention.ms"),
        ({"max.message.bytes": "2000", "min.insync.replicas": "4"}, "min.insync.replicas"),
        ({"max.message.bytes": "2000", "no.such": "1"}, "no.such"),
        ({"compression.type": "gzip", "max.message.bytes": "0"}, "max.message.bytes"),
        ({"unclean.leader.election.enable": "maybe"}, "unclean.leader.election.enable"),
        ({"segment.bytes": "1000", "retention.ms": "5"}, "segment.bytes"),
        ({"flush.policy": "never"}, "flush.policy"),
    ],
)
def test_one_bad_change_refuses_the_whole_alter_naming_it(changes: dict, named: str) -> None:
    with pytest.raises(InvalidConfig) as refused:
        BUILT_IN.altered(_topic({}), changes)
    assert refused.value.details["config"] == named


def test_every_config_is_alterable_while_the_topic_lives() -> None:
    changes = {
        "retention.ms": "60000",
        "retention.bytes": "1048576",
        "segment.bytes": "65536",
        "segment.ms": "1000",
        "index.interval.bytes": "128",
        "flush.policy": "os",
        "flush.ms": "50",
        "cleanup.policy": "compact",
        "delete.retention.ms": "10",
        "min.insync.replicas": "3",
        "max.message.bytes": "2000",
        "unclean.leader.election.enable": "true",
        "compression.type": "zstd",
    }
    assert BUILT_IN.altered(_topic({}), changes) == changes
    assert BUILT_IN.altered(_topic(changes), dict.fromkeys(changes)) == {}


def test_min_insync_replicas_above_the_replication_factor_is_refused_naming_both() -> None:
    with pytest.raises(InvalidConfig, match="2 is greater than the replication factor 1"):
        BUILT_IN.altered(_topic({}, replication_factor=1), {"min.insync.replicas": "2"})


def test_an_internal_topic_keeps_everything_through_an_alter() -> None:
    offsets = _topic({"cleanup.policy": "compact", "retention.ms": "-1"}, name="__consumer_offsets")
    with pytest.raises(InvalidConfig, match=r"retention\.ms=1000 for internal topic"):
        BUILT_IN.altered(offsets, {"retention.ms": "1000"})
    with pytest.raises(InvalidConfig, match=r"cleanup\.policy=delete for internal topic"):
        BUILT_IN.altered(offsets, {"cleanup.policy": None})
    assert BUILT_IN.altered(offsets, {"segment.bytes": "65536"})["segment.bytes"] == "65536"
