"""The configs Kafka's admin APIs show, with Kafka's config sources, from highwater's topic configs (pure).

A topic's configs are the configs its creator gave (kept in the topic record), the
rest resolved from the broker's ``topic_defaults``, exactly as the HTTP API lists
them (``TopicConfigs.effective``); this module only labels each value with where it
came from, as Kafka's DescribeConfigs and CreateTopics (v5+) do:

- given at creation or by an alter -> ``DYNAMIC_TOPIC_CONFIG``;
- otherwise the broker default: ``DYNAMIC_DEFAULT_BROKER_CONFIG`` when it was set
  cluster-wide at runtime (``broker.topics.cluster_defaults``), else
  ``STATIC_BROKER_CONFIG`` when the broker's setting
  differs from highwater's built-in default (someone set it), else ``DEFAULT_CONFIG``.
  Kafka knows whether a key was written in server.properties; highwater's settings
  merge the TOML file, the environment and the ``log_*`` twins of ``topic_defaults``,
  so "differs from the built-in value" is the observable difference.

A broker resource lists the same defaults under Kafka's broker config names
(``log.retention.ms`` for ``retention.ms`` ...), plus ``num.partitions``,
``default.replication.factor`` and ``broker.id``. With synonyms asked for, a topic
config lists the topic override (if any) then the broker config it falls back to, in
Kafka's order of precedence.

``topic_config_entries`` labels the log configs (the ones with a broker setting to fall
back to); a topic's complete listing is ``TopicConfigs.describe``, which adds
``compression.type`` and is what both doors answer with (``describe_configs.topic_entries``
on the Kafka listener), so they cannot disagree on a config. Every topic config may be
altered while the topic lives, through either door (the HTTP API's config routes, the
Kafka listener's IncrementalAlterConfigs and AlterConfigs), so both report topic entries
not read-only. A broker's topic defaults are read once at start (``BrokerSettings``) and
changed only cluster-wide, so both doors report them read-only for one broker and refuse
such an alter the same way (``broker_config_alter_refusal``); the replication throttle
rates (``throttle_rates``) are the broker configs one broker may set for itself, listed
with Kafka's ``DYNAMIC_BROKER_CONFIG`` source when it has.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from broker.errors import InvalidConfig
from broker.topics.throttle_rates import RATE_SETTINGS, Layer, layers
from config.broker import BrokerSettings
from config.topic import TOPIC_CONFIG_NAMES, TopicDefaults, topic_config_field, topic_config_strings


class ConfigSource(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` numbers."""

    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class ConfigType(enum.IntEnum):
    """Kafka's ``ConfigDef.Type`` numbers, as DescribeConfigs v3+ reports them."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    LONG = 5


BROKER_CONFIG_NAMES: dict[str, str] = {
    "min_insync_replicas": "min.insync.replicas",
    "retention_ms": "log.retention.ms",
    "retention_bytes": "log.retention.bytes",
    "segment_bytes": "log.segment.bytes",
    "segment_ms": "log.roll.ms",
    "index_interval_bytes": "log.index.interval.bytes",
    "max_message_bytes": "message.max.bytes",
    "flush_policy": "log.flush.policy",
    "flush_interval_ms": "log.flush.interval.ms",
    "cleanup_policy": "log.cleanup.policy",
    "delete_retention_ms": "log.cleaner.delete.retention.ms",
    "unclean_leader_election_enable": "unclean.leader.election.enable",
    "partitions": "num.partitions",
    "replication_factor": "default.replication.factor",
}
"""``TopicDefaults`` field -> the Kafka broker config that holds the same default (``log.flush.policy`` is highwater's)."""

BROKER_CONFIG_NAMES_TO_FIELDS = {name: field for field, name in BROKER_CONFIG_NAMES.items()}

BUILT_IN_DEFAULTS = TopicDefaults()

BROKER_CONFIGS_FIXED = (
    f"only {' and '.join(RATE_SETTINGS)} can be set for one broker: set a topic default for the whole cluster "
    "instead (/broker-configs, or the broker resource with the empty name)"
)

_LAYER_SOURCES = {
    Layer.PER_BROKER: ConfigSource.DYNAMIC_BROKER_CONFIG,
    Layer.CLUSTER: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    Layer.STATIC: ConfigSource.STATIC_BROKER_CONFIG,
    Layer.DEFAULT: ConfigSource.DEFAULT_CONFIG,
}


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str
    source: ConfigSource


@dataclass(frozen=True)
class BrokerDefaults:
    """The topic defaults a broker applies: its static settings, and the cluster-wide
    dynamic broker configs (Kafka broker config name -> value) that override them."""

    static: TopicDefaults
    dynamic: Mapping[str, str]

    def synonyms(self, field: str, static_value: str) -> tuple[Synonym, ...]:
        """Where the default of ``field`` comes from, in Kafka's order of precedence."""
        name = BROKER_CONFIG_NAMES[field]
        static = Synonym(name, static_value, _default_source(self.static, field))
        if name in self.dynamic:
            return (Synonym(name, self.dynamic[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG), static)
        return (static,)


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str
    source: ConfigSource
    config_type: ConfigType
    documentation: str | None
    synonyms: tuple[Synonym, ...]

    @property
    def is_default(self) -> bool:
        return self.source is ConfigSource.DEFAULT_CONFIG


def topic_config_entries(
    given: Mapping[str, str], effective: Mapping[str, str], defaults: BrokerDefaults
) -> list[ConfigEntry]:
    """Every log config of a topic: ``effective`` values (all names), ``given`` the ones its record holds (any spelling).

    ``given`` must not hold ``compression.type``: ``TopicConfigs.describe`` takes it out and lists it.
    """
    given_by_field = {topic_config_field(name): value for name, value in given.items()}
    static_strings = topic_config_strings(defaults.static.topic_config())
    entries = []
    for name, field in TOPIC_CONFIG_NAMES.items():
        fallback = defaults.synonyms(field, static_strings[name])
        if field in given_by_field:
            override = Synonym(name, effective[name], ConfigSource.DYNAMIC_TOPIC_CONFIG)
            entries.append(_entry(name, field, override.value, override.source, (override, *fallback)))
        else:
            entries.append(_entry(name, field, effective[name], fallback[0].source, fallback))
    return entries


def broker_config_entries(
    settings: BrokerSettings, dynamic: Mapping[str, str], per_broker: Mapping[str, str]
) -> list[ConfigEntry]:
    """The broker's topic defaults under Kafka's broker config names (``dynamic`` the cluster-wide ones), its id,
    and its replication throttle rates (``per_broker``: the ones set for this broker alone)."""
    defaults = BrokerDefaults(settings.topic_defaults, dynamic)
    by_field = {
        TOPIC_CONFIG_NAMES[name]: value for name, value in topic_config_strings(defaults.static.topic_config()).items()
    }
    by_field["partitions"] = str(defaults.static.partitions)
    by_field["replication_factor"] = str(defaults.static.replication_factor)
    entries = []
    for field, name in BROKER_CONFIG_NAMES.items():
        synonyms = defaults.synonyms(field, by_field[field])
        entries.append(_entry(name, field, synonyms[0].value, synonyms[0].source, synonyms))
    broker_id = Synonym("broker.id", str(settings.node_id), ConfigSource.STATIC_BROKER_CONFIG)
    documentation = BrokerSettings.model_fields["node_id"].description
    entries.append(
        ConfigEntry(broker_id.name, broker_id.value, broker_id.source, ConfigType.INT, documentation, (broker_id,))
    )
    for name in RATE_SETTINGS:
        synonyms = tuple(
            Synonym(name, str(value), _LAYER_SOURCES[layer])
            for value, layer in layers(name, settings, dynamic, per_broker)
        )
        entries.append(_rate_entry(name, synonyms))
    return entries


def _rate_entry(name: str, synonyms: tuple[Synonym, ...]) -> ConfigEntry:
    documentation = BrokerSettings.model_fields[RATE_SETTINGS[name]].description
    return ConfigEntry(name, synonyms[0].value, synonyms[0].source, ConfigType.LONG, documentation, synonyms)


def cluster_config_entries(defaults: BrokerDefaults) -> list[ConfigEntry]:
    """The cluster-wide dynamic broker configs set, sorted by name (Kafka's default broker resource)."""
    entries = []
    for name, value in sorted(defaults.dynamic.items()):
        synonym = Synonym(name, value, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        if name in RATE_SETTINGS:
            entries.append(_rate_entry(name, (synonym,)))
        else:
            entries.append(_entry(name, BROKER_CONFIG_NAMES_TO_FIELDS[name], value, synonym.source, (synonym,)))
    return entries


def read_only_for_one_broker(name: str) -> bool:
    """Whether one broker's config ``name`` cannot be altered for that broker alone (all but the throttle rates)."""
    return name not in RATE_SETTINGS


def read_only_broker_config(name: str) -> InvalidConfig:
    """The refusal of an alter of broker config ``name`` for one broker, naming it."""
    return InvalidConfig(f"config {name} is read-only for one broker: {BROKER_CONFIGS_FIXED}", config=name)


def broker_config_alter_refusal(names: Sequence[str], known: Collection[str]) -> InvalidConfig | None:
    """Why an alter of one broker's configs ``names`` is refused; None when every one may be set for it.

    Names the first config that is no broker config (``known``: the broker's entries),
    else the first one that is read-only for one broker: every one but the throttle
    rates, since one value for the whole cluster (``broker.topics.cluster_defaults``)
    keeps every replica of a partition on the same rules, whichever broker holds it.
    """
    unknown = [name for name in names if name not in known]
    if unknown:
        return InvalidConfig(f"config {unknown[0]} is not a broker config of highwater", config=unknown[0])
    fixed = [name for name in names if read_only_for_one_broker(name)]
    return read_only_broker_config(fixed[0]) if fixed else None


def select(entries: list[ConfigEntry], keys: tuple[str, ...] | None) -> list[ConfigEntry]:
    """Kafka's filter: a null key list means every config; otherwise the named ones (unknown names are skipped)."""
    if keys is None:
        return entries
    wanted = set(keys)
    return [entry for entry in entries if entry.name in wanted]


def _default_source(defaults: TopicDefaults, field: str) -> ConfigSource:
    if getattr(defaults, field) == getattr(BUILT_IN_DEFAULTS, field):
        return ConfigSource.DEFAULT_CONFIG
    return ConfigSource.STATIC_BROKER_CONFIG


def _entry(name: str, field: str, value: str, source: ConfigSource, synonyms: tuple[Synonym, ...]) -> ConfigEntry:
    model_field = TopicDefaults.model_fields[field]
    return ConfigEntry(
        name, value, source, _config_type(field, model_field.annotation), model_field.description, synonyms
    )


def _config_type(field: str, annotation: object) -> ConfigType:
    if annotation is bool:
        return ConfigType.BOOLEAN
    if annotation is int:
        return ConfigType.LONG if field.endswith("_ms") or field == "retention_bytes" else ConfigType.INT
    return ConfigType.STRING
