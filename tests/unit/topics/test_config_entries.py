"""Which source Kafka's admin APIs report for each config, from highwater's topic configs and defaults."""

from __future__ import annotations

from broker.topics.config_entries import (
    BrokerDefaults,
    ConfigSource,
    ConfigType,
    broker_config_entries,
    cluster_config_entries,
    select,
    topic_config_entries,
)
from broker.topics.configs import TopicConfigs
from config.broker import BrokerSettings
from config.topic import TOPIC_CONFIG_NAMES, TopicDefaults


def entries_of(given: dict[str, str], defaults: TopicDefaults, dynamic: dict[str, str] | None = None) -> dict:
    configs = TopicConfigs(defaults)
    configs.apply_cluster_configs(dynamic or {})
    effective = configs.effective(given)
    return {entry.name: entry for entry in topic_config_entries(given, effective, configs.broker_defaults)}


def test_every_topic_config_is_listed_once_with_the_value_the_http_api_shows() -> None:
    defaults = TopicDefaults()
    entries = entries_of({}, defaults)
    assert list(entries) == list(TOPIC_CONFIG_NAMES)
    assert {name: e.value for name, e in entries.items()} == TopicConfigs(defaults).effective({})
    assert all(e.source is ConfigSource.DEFAULT_CONFIG and e.is_default for e in entries.values())


def test_a_config_given_at_creation_is_a_topic_config_in_any_spelling() -> None:
    entries = entries_of({"retention_ms": "5000"}, TopicDefaults())
    assert (entries["retention.ms"].value, entries["retention.ms"].source) == (
        "5000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )
    assert not entries["retention.ms"].is_default
    assert [(s.name, s.source) for s in entries["retention.ms"].synonyms] == [
        ("retention.ms", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ("log.retention.ms", ConfigSource.DEFAULT_CONFIG),
    ]


def test_a_broker_default_someone_changed_is_a_static_broker_config() -> None:
    entries = entries_of({}, TopicDefaults(min_insync_replicas=2, retention_bytes=-1))
    assert (entries["min.insync.replicas"].value, entries["min.insync.replicas"].source) == (
        "2",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert entries["retention.bytes"].source is ConfigSource.DEFAULT_CONFIG


def test_broker_configs_use_kafkas_broker_names_and_types() -> None:
    settings = BrokerSettings(node_id=7, topic_defaults=TopicDefaults(replication_factor=3, retention_ms=1000))
    entries = {e.name: e for e in broker_config_entries(settings, {}, {})}
    assert (entries["default.replication.factor"].value, entries["default.replication.factor"].source) == (
        "3",
        ConfigSource.STATIC_BROKER_CONFIG,
    )
    assert (entries["log.retention.ms"].value, entries["log.retention.ms"].config_type) == ("1000", ConfigType.LONG)
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == ("1", ConfigSource.DEFAULT_CONFIG)
    assert entries["unclean.leader.election.enable"].config_type is ConfigType.BOOLEAN
    assert entries["broker.id"].value == "7"


def test_select_keeps_named_configs_and_null_means_all() -> None:
    entries = broker_config_entries(BrokerSettings(), {}, {})
    assert select(entries, None) == entries
    assert [e.name for e in select(entries, ("broker.id", "no.such.config"))] == ["broker.id"]
    assert select(entries, ()) == []


def test_a_cluster_wide_dynamic_default_comes_before_the_static_setting() -> None:
    entries = entries_of(
        {"segment.bytes": "2048"},
        TopicDefaults(retention_ms=1000),
        {"log.retention.ms": "5000", "log.segment.bytes": "4096"},
    )
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.is_default) == (
        "5000",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        False,
    )
    assert [(s.value, s.source) for s in retention.synonyms] == [
        ("5000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("1000", ConfigSource.STATIC_BROKER_CONFIG),
    ]
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("2048", ConfigSource.DYNAMIC_TOPIC_CONFIG), "a topic override wins"
    assert [s.source for s in segment.synonyms] == [
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG,
    ]


def test_broker_configs_and_the_cluster_resource_list_the_dynamic_defaults() -> None:
    settings = BrokerSettings(node_id=2)
    entries = {e.name: e for e in broker_config_entries(settings, {"num.partitions": "6"}, {})}
    assert (entries["num.partitions"].value, entries["num.partitions"].source) == (
        "6",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    )
    assert entries["num.partitions"].synonyms[1].value == "1"
    listed = cluster_config_entries(BrokerDefaults(TopicDefaults(), {"num.partitions": "6", "log.retention.ms": "9"}))
    assert [(e.name, e.value, e.source) for e in listed] == [
        ("log.retention.ms", "9", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("num.partitions", "6", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    ]
    assert cluster_config_entries(BrokerDefaults(TopicDefaults(), {})) == []
