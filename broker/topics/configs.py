"""Resolving a topic's configs: Kafka-named strings -> ``TopicConfig`` -> ``LogConfig``.

Topic records keep only the configs their creator (or a later alter) gave; everything
else comes from the broker's ``topic_defaults``, so changing a default reaches every
topic that did not override it, as in Kafka.

``compression.type`` is accepted with Kafka's values (default ``producer``) so tools
that set it keep working, and it is listed with the others. The broker never re-encodes
records (DESIGN §3: it moves the producer's batches byte for byte), so every value
behaves as ``producer`` does: batches stay as the producer compressed them.

Which configs an alter may change while the topic lives (``RUNTIME_TOPIC_CONFIGS``)
is decided by where each is read: a config every broker reads from the topic record on
every use takes effect at once everywhere; one a replica copies when it opens its log
or becomes leader (retention, segments, flush, ``min.insync.replicas``) would leave the
replicas that already exist on the old value while new ones take the new one, so it is
read-only after creation (``is_read_only``) and an alter of it is refused, nothing changed.
"""

from __future__ import annotations

from collections.abc import Mapping

from broker.errors import InvalidConfig
from broker.kafka.config_entries import ConfigEntry, ConfigSource, ConfigType, Synonym, topic_config_entries
from broker.storage.log_config import LogConfig
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

RUNTIME_TOPIC_CONFIGS = frozenset({"max.message.bytes", "unclean.leader.election.enable", COMPRESSION_TYPE})
"""Read from the topic record at each use: the produce path's size check on every broker,
the controller's election rule, and (listed only) the compression type."""


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


class TopicConfigs:
    """The broker's defaults and the conversions every topic config goes through."""

    def __init__(self, defaults: TopicDefaults) -> None:
        self.defaults = defaults
        self._default_config = defaults.topic_config()
        self._parsed: dict[frozenset[tuple[str, str]], TopicConfig] = {}

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
        entries = topic_config_entries(given, self.effective(given), self.defaults)
        default = Synonym(COMPRESSION_TYPE, DEFAULT_COMPRESSION_TYPE, ConfigSource.DEFAULT_CONFIG)
        synonyms: tuple[Synonym, ...] = (default,)
        if compression is not None:
            synonyms = (Synonym(COMPRESSION_TYPE, compression, ConfigSource.DYNAMIC_TOPIC_CONFIG), default)
        first = synonyms[0]
        entries.append(
            ConfigEntry(COMPRESSION_TYPE, first.value, first.source, ConfigType.STRING, COMPRESSION_DOC, synonyms)
        )
        return sorted(entries, key=lambda entry: entry.name)

    def altered(self, current: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
        """The topic record's configs after ``changes`` (a None value resets to the default).

        All or nothing: every name is checked (known, alterable at runtime) and the whole
        result parsed before anything is returned, so a refused alter changes nothing.
        Names are kept in Kafka's dotted spelling whatever spelling the record held.
        """
        result = {canonical_config_name(name): value for name, value in current.items()}
        for name, value in changes.items():
            dotted = canonical_config_name(name)
            if dotted not in RUNTIME_TOPIC_CONFIGS:
                raise InvalidConfig(
                    f"config {dotted} is read-only once a topic exists: its replicas apply it when they open "
                    f"their logs; alterable at runtime: {', '.join(sorted(RUNTIME_TOPIC_CONFIGS))}",
                    config=dotted,
                )
            if value is None:
                result.pop(dotted, None)
            else:
                result[dotted] = value
        self.parse(result)
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
