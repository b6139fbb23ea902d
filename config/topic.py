"""Per-topic settings: the broker-wide defaults and the configs a topic is created with.

``TopicDefaults`` is what a topic gets when its creator says nothing (Kafka's broker
``log.*`` / ``default.replication.factor`` / ``num.partitions`` settings).
``TopicConfig`` is the resolved per-topic configuration: the defaults overlaid with
the configs given at creation. Those arrive from the REST API under Kafka's dotted
names (``retention.ms``, ``min.insync.replicas``), as strings, exactly as the
Confluent REST Proxy passes them on; ``parse_topic_configs`` is the single place
they are checked, so a bad one is refused with ``INVALID_CONFIG`` naming it before
any topic exists.

Invariants (checked by the models): sizes are positive, ``-1`` means "no limit" for
``retention_ms`` and ``retention_bytes`` as in Kafka, ``min_insync_replicas >= 1``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from broker.errors import InvalidConfig
from config.errors import describe_problem

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
DAY_MS = 24 * 60 * 60 * 1000
MAX_SEGMENT_BYTES = 2**31 - 1
"""Segment positions are int32 in the ``.index`` file, so a segment stays below 2 GiB."""

ConfigModel = TypeVar("ConfigModel", bound=BaseModel)

FlushPolicy = Literal["fsync", "interval", "os"]
CleanupPolicy = Literal["delete", "compact"]


class TopicConfig(BaseModel):
    """A topic's resolved configuration (defaults overlaid with its creation configs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_insync_replicas: int = Field(1, ge=1, description="acks=all needs this many in-sync replicas")
    retention_ms: int = Field(
        7 * DAY_MS, ge=-1, description="delete whole segments older than this; -1 keeps them forever"
    )
    retention_bytes: int = Field(
        -1, ge=-1, description="delete the oldest segments while a partition is larger than this; -1 = no limit"
    )
    segment_bytes: int = Field(GIB, ge=1024, le=MAX_SEGMENT_BYTES, description="roll a new segment at this size")
    segment_ms: int = Field(7 * DAY_MS, ge=1, description="roll a new segment after this long")
    index_interval_bytes: int = Field(4096, ge=0, description="one offset-index entry per this many log bytes")
    max_message_bytes: int = Field(
        MIB + 12, ge=1, description="largest record batch a producer may send; a larger one gets 413"
    )
    flush_policy: FlushPolicy = Field(
        "fsync",
        description=(
            "fsync: a group-committed fsync before an acks=all answer (no acknowledged record lost on power loss); "
            "interval: fsync every flush_interval_ms; os: leave it to the OS page cache (Kafka's default)"
        ),
    )
    flush_interval_ms: int = Field(1000, ge=1, description="fsync period when flush_policy is interval")
    cleanup_policy: CleanupPolicy = Field(
        "delete", description="delete: retention removes old segments; compact: keep the latest record of each key"
    )
    delete_retention_ms: int = Field(
        DAY_MS,
        ge=0,
        description=(
            "compact: a tombstone (null value) is removed once it is this old, so consumers that were behind "
            "still see the deletion"
        ),
    )
    unclean_leader_election_enable: bool = Field(
        False,
        description=(
            "let a replica outside the ISR become leader when no ISR member is alive: the partition comes "
            "back sooner but acknowledged records may be lost"
        ),
    )


class TopicDefaults(TopicConfig):
    """Defaults for new topics, set in ``[topic_defaults]`` or ``HIGHWATER_TOPIC_DEFAULTS__*``."""

    partitions: int = Field(1, ge=1, description="partitions_count when a create request gives none")
    replication_factor: int = Field(1, ge=1, description="replication_factor when a create request gives none")

    def topic_config(self) -> TopicConfig:
        return TopicConfig.model_validate(self.model_dump(include=set(TopicConfig.model_fields)))


TOPIC_CONFIG_NAMES: dict[str, str] = {
    "min.insync.replicas": "min_insync_replicas",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "index.interval.bytes": "index_interval_bytes",
    "max.message.bytes": "max_message_bytes",
    "flush.policy": "flush_policy",
    "flush.ms": "flush_interval_ms",
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "unclean.leader.election.enable": "unclean_leader_election_enable",
}
"""Kafka's dotted topic config names -> ``TopicConfig`` fields (the REST API's vocabulary)."""

FIELD_CONFIG_NAMES = {field: name for name, field in TOPIC_CONFIG_NAMES.items()}


def parse_config_value(name: str, field: str, raw: Any) -> Any:
    """Parse one config string by the ``TopicDefaults`` field's type; say (naming ``name``) what was expected."""
    annotation = TopicDefaults.model_fields[field].annotation
    text = str(raw).strip()
    if annotation is int:
        try:
            return int(text)
        except ValueError:
            raise InvalidConfig(f"invalid config {name}: not an integer (got {raw!r})", config=name) from None
    if annotation is bool:
        if text.lower() not in ("true", "false"):
            raise InvalidConfig(f"invalid config {name}: must be true or false (got {raw!r})", config=name)
        return text.lower() == "true"
    allowed = get_args(annotation)
    if text not in allowed:
        choices = ", ".join(allowed)
        raise InvalidConfig(f"invalid config {name}: must be one of {choices} (got {raw!r})", config=name)
    return text


def topic_config_field(name: str) -> str:
    """The ``TopicConfig`` field a Kafka config name sets; ``InvalidConfig`` naming it when it is unknown."""
    field = TOPIC_CONFIG_NAMES.get(name) or (name if name in FIELD_CONFIG_NAMES else None)
    if field is None:
        known = ", ".join(sorted(TOPIC_CONFIG_NAMES))
        raise InvalidConfig(f"invalid config {name}: unknown topic config (known: {known})", config=name)
    return field


def parse_topic_configs(configs: dict[str, str], defaults: TopicConfig) -> TopicConfig:
    """Overlay Kafka-named topic configs on ``defaults``; raise ``InvalidConfig`` naming the bad one.

    Accepts Kafka's dotted names and, for convenience, the field names themselves
    (``retention_ms``). Unknown names are refused rather than ignored so a typo never
    silently leaves a topic with the default retention.
    """
    return overlay_named(
        TopicConfig, defaults.model_dump(include=set(TopicConfig.model_fields)), configs, topic_config_field
    )


def overlay_named(
    model: type[ConfigModel], base: dict[str, Any], configs: Mapping[str, str], field_of: Callable[[str], str]
) -> ConfigModel:
    """``model`` of ``base`` with each named config string parsed into its field (``field_of(name)``).

    The one place a config given by name meets the model's rules: an unknown name, an
    unparsable value or one the model refuses raises ``InvalidConfig`` naming the config
    as it was given (topic configs here, the cluster-wide broker configs too).
    """
    updates = {}
    for name, raw in configs.items():
        field = field_of(name)
        updates[field] = parse_config_value(name, field, raw)
    try:
        return model.model_validate({**base, **updates})
    except ValidationError as error:
        detail = error.errors()[0]
        field = str(detail["loc"][0])
        name = next((n for n in configs if field_of(n) == field), field)
        raise InvalidConfig(f"invalid config {name}: {describe_problem(detail)}", config=name) from None


def topic_config_strings(config: TopicConfig) -> dict[str, str]:
    """A ``TopicConfig`` as Kafka-named strings, as the REST API lists a topic's configs."""
    values = config.model_dump()
    return {
        name: str(values[field]).lower() if isinstance(values[field], bool) else str(values[field])
        for name, field in TOPIC_CONFIG_NAMES.items()
    }
