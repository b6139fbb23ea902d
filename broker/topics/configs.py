"""Resolving a topic's configs: Kafka-named strings -> ``TopicConfig`` -> ``LogConfig``.

Topic records keep only the configs their creator (or a later alter) gave; everything
else comes from the broker's defaults: its ``topic_defaults`` settings overlaid with the
cluster-wide dynamic broker configs (``apply_cluster_configs``), so changing a default
reaches every topic that did not override it, as in Kafka.

``compression.type`` is accepted with Kafka's values (default ``producer``) so tools
that set it keep working, and it is listed with the others. The broker never re-encodes
records (docs/architecture.md: it moves the producer's batches byte for byte), so every value
behaves as ``producer`` does: batches stay as the producer compressed them.

Every config may be altered while the topic lives, as in Kafka: each broker applies
the topic record's new configs to its replicas where its watch delivers it
(``ReplicaManager.apply_topic_record``) — the log from its next append or retention
pass, the replication core (``min.insync.replicas``, the flush policy) at once — and a
replica created later reads them from the record. An alter is checked by the same
policies as a creation (``min.insync.replicas`` within the replication factor, an
internal topic keeps everything) before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from broker.errors import InvalidConfig
from broker.storage.log_config import LogConfig
from broker.topics.cluster_defaults import overlay
from broker.topics.config_entries import (
    BrokerDefaults,
    ConfigEntry,
    ConfigSource,
    ConfigType,
    Synonym,
    topic_config_entries,
)
from broker.topics.policy import check_internal_configs, check_min_insync_replicas, is_internal_topic
from config.topic import (
    TOPIC_CONFIG_NAMES,
    TopicConfig,
    TopicDefaults,
    parse_topic_configs,
    topic_config_field,
    topic_config_strings,
)

COMPRESSION_TYPE = "compression.type"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
DEFAULT_COMPRESSION_TYPE = "producer"
COMPRESSION_DOC = (
    "Kafka's values are accepted; the broker keeps batches as the producer compressed them, as 'producer' does"
)


def canonical_config_name(name: str) -> str:
    """Kafka's dotted name for ``name`` (a field name is accepted too); ``InvalidConfig`` when unknown."""
    if name == COMPRESSION_TYPE:
        return name
    field = topic_config_field(name)
    return next(dotted for dotted, known in TOPIC_CONFIG_NAMES.items() if known == field)


def _check_compression(value: str) -> None:
    if value not in COMPRESSION_TYPES:
        choices = ", ".join(COMPRESSION_TYPES)
        raise InvalidConfig(
            f"invalid config {COMPRESSION_TYPE}: must be one of {choices} (got {value!r})", config=COMPRESSION_TYPE
        )


class ConfiguredTopic(Protocol):
    """What an alter needs of a topic (``broker.cluster.records.TopicRecord`` has it): topics sit below the metadata."""

    @property
    def name(self) -> str: ...
    @property
    def configs(self) -> Mapping[str, str]: ...
    @property
    def replication_factor(self) -> int: ...
    @property
    def internal(self) -> bool: ...


class TopicConfigs:
    """The broker's defaults and the conversions every topic config goes through."""

    def __init__(self, defaults: TopicDefaults) -> None:
        self.static_defaults = defaults
        self.dynamic_defaults: dict[str, str] = {}
        """The cluster-wide dynamic broker configs in force (``cluster_defaults``)."""
        self.defaults = defaults
        self._default_config = defaults.topic_config()
        self._parsed: dict[frozenset[tuple[str, str]], TopicConfig] = {}

    @property
    def broker_defaults(self) -> BrokerDefaults:
        return BrokerDefaults(self.static_defaults, self.dynamic_defaults)

    def apply_cluster_configs(self, configs: Mapping[str, str]) -> None:
        """Take the cluster record's dynamic broker configs as the defaults of every topic from now.

        ``InvalidConfig`` (nothing changed) for a record this broker cannot apply; the
        controller writes only records that overlay cleanly.
        """
        self.defaults = overlay(self.static_defaults, configs)
        self.dynamic_defaults = dict(configs)
        self._default_config = self.defaults.topic_config()
        self._parsed.clear()

    def parse(self, configs: dict[str, str]) -> TopicConfig:
        """Raise ``InvalidConfig`` naming the first bad config.

        Every produce request asks for its topic's ``max.message.bytes``, so a valid
        result is kept per distinct set of configs (``TopicConfig`` is frozen): pydantic
        validation was 2.4 % of a broker's produce-path CPU in the profile. The cache is
        bounded by the number of distinct config sets the cluster's topics carry.
        """
        key = frozenset(configs.items())
        parsed = self._parsed.get(key)
        if parsed is None:
            if COMPRESSION_TYPE in configs:
                _check_compression(configs[COMPRESSION_TYPE])
            log_configs = {name: value for name, value in configs.items() if name != COMPRESSION_TYPE}
            parsed = self._parsed[key] = parse_topic_configs(log_configs, self._default_config)
        return parsed

    def effective(self, configs: dict[str, str]) -> dict[str, str]:
        """The log configs' values (what both doors list on a topic); ``describe`` adds ``compression.type``."""
        return topic_config_strings(self.parse(configs))

    def describe(self, configs: Mapping[str, str]) -> list[ConfigEntry]:
        """Every config of a topic whose record holds ``configs``, labelled with its source and synonyms.

        Sorted by name. ``compression.type`` has no broker setting in highwater, so its
        only fallback is Kafka's built-in default.
        """
        given = dict(configs)
        compression = given.pop(COMPRESSION_TYPE, None)
        entries = topic_config_entries(given, self.effective(given), self.broker_defaults)
        default = Synonym(COMPRESSION_TYPE, DEFAULT_COMPRESSION_TYPE, ConfigSource.DEFAULT_CONFIG)
        synonyms: tuple[Synonym, ...] = (default,)
        if compression is not None:
            synonyms = (Synonym(COMPRESSION_TYPE, compression, ConfigSource.DYNAMIC_TOPIC_CONFIG), default)
        first = synonyms[0]
        entries.append(
            ConfigEntry(COMPRESSION_TYPE, first.value, first.source, ConfigType.STRING, COMPRESSION_DOC, synonyms)
        )
        return sorted(entries, key=lambda entry: entry.name)

    def altered(self, topic: ConfiguredTopic, changes: Mapping[str, str | None]) -> dict[str, str]:
        """``topic``'s record configs after ``changes`` (a None value resets to the default).

        All or nothing: every name is checked (known), the whole result parsed and held
        to the topic policies (``min.insync.replicas`` within the replication factor, an
        internal topic's retention) before anything is returned, so a refused alter
        changes nothing. Names are kept in Kafka's dotted spelling whatever spelling the
        record held.
        """
        result = {canonical_config_name(name): value for name, value in topic.configs.items()}
        for name, value in changes.items():
            dotted = canonical_config_name(name)
            if value is None:
                result.pop(dotted, None)
            else:
                result[dotted] = value
        config = self.parse(result)
        check_min_insync_replicas(result, config, topic.replication_factor)
        if topic.internal or is_internal_topic(topic.name):
            check_internal_configs(topic.name, config)
        return result

    def log_config(self, configs: dict[str, str]) -> LogConfig:
        config = self.parse(configs)
        return LogConfig(
            segment_bytes=config.segment_bytes,
            segment_ms=config.segment_ms,
            index_interval_bytes=config.index_interval_bytes,
            retention_ms=config.retention_ms,
            retention_bytes=config.retention_bytes,
            max_message_bytes=config.max_message_bytes,
            flush_policy=config.flush_policy,
            flush_interval_ms=config.flush_interval_ms,
            cleanup_policy=config.cleanup_policy,
            delete_retention_ms=config.delete_retention_ms,
        )
