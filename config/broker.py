"""Broker settings, and how they are layered from flags, environment, a TOML file and defaults.

Layering, highest first (``load_broker_settings``):

1. command-line flags (passed as keyword overrides; ``None`` means "flag not given");
2. environment variables ``HIGHWATER_<FIELD>``, nested with ``__``
   (``HIGHWATER_TOPIC_DEFAULTS__RETENTION_MS=3600000``);
3. the TOML file given with ``--config`` (top-level keys are fields, ``[topic_defaults]``
   is a table);
4. the defaults below.

A ``HIGHWATER_*`` variable or a key of the file that names nothing highwater reads stops
the load, naming the closest name that is read (``config.unknown_names``).

The ``log_*`` fields carry Kafka's broker-level names (``log.segment.bytes``...) and are
the defaults of the matching per-topic configs, so each pair is one setting under two
names: whichever is given fills the other, and giving both with different values is an
error rather than a silent choice.
"""

from __future__ import annotations

import contextvars
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from config.console import ConsoleSettings
from config.errors import ConfigFileError, UnknownSettingName
from config.security import SecuritySettings, TlsSettings
from config.store_url import parse_store_url
from config.topic import DAY_MS, GIB, MAX_SEGMENT_BYTES, MIB, FlushPolicy, TopicDefaults
from config.unknown_names import environment_refusal, file_refusal
from config.variables import PREFIX

UNLIMITED_RATE = 2**63 - 1
"""Kafka's default of a replication throttle rate (``Long.MAX_VALUE``): no throttle."""

LOG_SETTING_TOPIC_FIELDS = {
    "log_segment_bytes": "segment_bytes",
    "log_segment_ms": "segment_ms",
    "log_retention_ms": "retention_ms",
    "log_retention_bytes": "retention_bytes",
    "log_index_interval_bytes": "index_interval_bytes",
    "log_flush_policy": "flush_policy",
    "log_flush_interval_ms": "flush_interval_ms",
}
"""Broker ``log_*`` setting -> the ``TopicDefaults`` field it is another name for."""


def _same_as(topic_field: str) -> str:
    """A ``log_*`` setting's description: its meaning is written once, on its ``topic_defaults`` twin."""
    meaning = TopicDefaults.model_fields[topic_field].description
    return f"topic_defaults.{topic_field} under Kafka's broker name ({meaning}); give one of the two"


_config_file: contextvars.ContextVar[Path | None] = contextvars.ContextVar("highwater_config_file", default=None)


class BrokerSettings(BaseSettings):
    """Everything one broker process needs to start. Field names carry their units."""

    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    node_id: int = Field(1, ge=0, description="this broker's id, unique in the cluster")
    host: str = Field("127.0.0.1", min_length=1, description="address to listen on")
    port: int = Field(9092, ge=0, le=65535, description="port to listen on; 0 picks a free one")
    advertised_url: str | None = Field(
        None, description="URL other brokers and clients use; default http(s)://host:port, https with TLS"
    )
    inter_broker_url: str | None = Field(
        None, description="URL other brokers use for this one (replica fetch, forwarding); default advertised_url"
    )
    data_dir: Path = Field(Path(".highwater/data"), description="where partition logs and checkpoints live")
    rack: str | None = Field(None, description="rack id for rack-aware replica placement")
    metadata_store: str | None = Field(
        None,
        description=(
            "cluster metadata store: sqlite:///abs/path/metadata.db (one host, many brokers) or "
            "etcd://host:port,host:port (production); unset = an sqlite file inside data_dir"
        ),
    )
    cluster_id: str | None = Field(
        None, description="cluster id to create or join; unset = generated once and kept in the metadata store"
    )

    max_request_bytes: int = Field(
        64 * MIB, ge=1024, description="largest HTTP request body accepted; a larger one gets 413"
    )
    max_batch_entries: int = Field(10_000, ge=1, description="most entries in one records:batch request")
    fetch_max_bytes_default: int = Field(MIB, ge=1, description="max_bytes of a read request that gives none")
    fetch_max_wait_ms: int = Field(
        30_000, ge=0, description="longest long-poll (timeout_ms) a read request may ask for"
    )
    produce_timeout_ms_default: int = Field(
        30_000, ge=1, description="how long an acks=all produce waits when it gives no timeout_ms"
    )
    request_body_timeout_ms: int = Field(
        30_000, ge=1, description="longest wait for a request body to arrive; a sender that stalls gets 408"
    )

    log_segment_bytes: int = Field(GIB, ge=1024, le=MAX_SEGMENT_BYTES, description=_same_as("segment_bytes"))
    log_segment_ms: int = Field(7 * DAY_MS, ge=1, description=_same_as("segment_ms"))
    log_retention_ms: int = Field(7 * DAY_MS, ge=-1, description=_same_as("retention_ms"))
    log_retention_bytes: int = Field(-1, ge=-1, description=_same_as("retention_bytes"))
    log_retention_check_interval_ms: int = Field(
        300_000, ge=1, description="how often retention looks for whole segments to delete"
    )
    log_index_interval_bytes: int = Field(4096, ge=0, description=_same_as("index_interval_bytes"))
    log_flush_policy: FlushPolicy = Field("fsync", description=_same_as("flush_policy"))
    log_flush_interval_ms: int = Field(1000, ge=1, description=_same_as("flush_interval_ms"))

    replica_lag_time_max_ms: int = Field(10_000, ge=1, description="a follower not caught up this long leaves the ISR")
    replica_fetch_wait_max_ms: int = Field(
        500,
        ge=0,
        description="how long a follower's fetch waits at the leader for new data; less than replica_lag_time_max_ms",
    )
    replica_fetch_max_bytes: int = Field(MIB, ge=1, description="bytes per partition in one follower fetch")
    replica_fetch_transport: Literal["stream", "http"] = Field(
        "stream",
        description=(
            "how a follower's fetches reach its leader: on one kept-open connection per leader broker "
            "(stream, a WebSocket on the inter-broker listener) or one HTTP request each (http)"
        ),
    )
    leader_replication_throttled_rate: int = Field(
        UNLIMITED_RATE,
        ge=0,
        le=UNLIMITED_RATE,
        description="bytes/s this broker sends, as leader, to replicas a move is adding (leader.replication.throttled.rate)",
    )
    follower_replication_throttled_rate: int = Field(
        UNLIMITED_RATE,
        ge=0,
        le=UNLIMITED_RATE,
        description="bytes/s this broker fetches for replicas a move is adding here (follower.replication.throttled.rate)",
    )
    replica_high_watermark_checkpoint_interval_ms: int = Field(
        5000, ge=1, description="how often the broker writes its high watermarks to disk"
    )
    broker_session_timeout_ms: int = Field(
        6000, ge=1, description="a broker that has not renewed its lease for this long is dead; its leaderships move"
    )
    broker_heartbeat_interval_ms: int = Field(
        1000, ge=1, description="how often the broker renews its lease; less than broker_session_timeout_ms"
    )
    auto_leader_rebalance_enable: bool = Field(
        True,
        description=(
            "periodically move leadership back to each partition's preferred (first) replica "
            "while it is alive and in the ISR (Kafka's auto.leader.rebalance.enable)"
        ),
    )
    leader_imbalance_check_interval_ms: int = Field(
        5_000, ge=1, description="preferred-leader check period (Kafka: 300 s; one read of the partition records)"
    )
    leader_imbalance_per_broker_percentage: int = Field(
        10, ge=0, le=100, description="rebalance a broker once more than this % of its preferred partitions moved"
    )
    max_incremental_fetch_session_cache_slots: int = Field(
        1000,
        ge=0,
        description=(
            "fetch sessions (KIP-227) a broker keeps for Kafka clients; 0: none, every fetch is a full one "
            "(max.incremental.fetch.session.cache.slots)"
        ),
    )
    group_consumer_session_timeout_ms: int = Field(
        45_000,
        ge=1,
        description=(
            "a Kafka client's consumer-protocol (KIP-848) member silent this long is expelled "
            "(group.consumer.session.timeout.ms)"
        ),
    )
    group_consumer_heartbeat_interval_ms: int = Field(
        5_000,
        ge=1,
        description=(
            "how often a Kafka client's consumer-protocol member is told to heartbeat; less than "
            "group_consumer_session_timeout_ms (group.consumer.heartbeat.interval.ms)"
        ),
    )
    offsets_topic_num_partitions: int = Field(
        50,
        ge=1,
        description="partitions of __consumer_offsets (the group coordinators), fixed when the topic is first created",
    )
    transaction_state_num_partitions: int = Field(
        50,
        ge=1,
        description="partitions of __transaction_state (the transaction coordinators), fixed when it is first created",
    )
    transaction_max_timeout_ms: int = Field(
        900_000,
        ge=1,
        description="the longest transaction timeout a producer may ask for (Kafka's transaction.max.timeout.ms)",
    )
    transaction_abort_timed_out_check_interval_ms: int = Field(
        1_000,
        ge=10,
        description="how often a coordinator aborts the transactions open past their timeout (Kafka: 10 s)",
    )
    rest_consumer_instance_timeout_ms: int = Field(
        300_000,
        ge=100,
        description="a REST Proxy v2 consumer instance idle this long is removed (Confluent's consumer.instance.timeout.ms)",
    )

    log_level: Literal["debug", "info", "warning", "error", "critical"] = Field(
        "info", description="least severe log event written (case-insensitive)"
    )
    log_format: Literal["json", "console", "auto"] = Field(
        "auto",
        description="json: one JSON object a line; console: for people; auto: console on a terminal, json otherwise",
    )

    topic_defaults: TopicDefaults = Field(
        default_factory=TopicDefaults,
        description="what a new topic gets for each config its creator does not give",
    )
    security: SecuritySettings = Field(
        default_factory=SecuritySettings,
        description="who may connect and what they may do: authentication, super users, ACLs, quotas",
    )
    tls: TlsSettings = Field(
        default_factory=TlsSettings,
        description="the certificate this broker serves to clients and other brokers, and the CA it trusts",
    )
    console: ConsoleSettings = Field(
        default_factory=ConsoleSettings,
        description="how often the web console's samplers run and how much history they keep",
    )
    allow_anonymous: bool = Field(
        False, description="listen on a non-loopback address with authentication = 'none' (refused otherwise)"
    )

    kafka_listener: str | None = Field(
        None,
        description="host:port of the Kafka-protocol listener; unset = no Kafka listener; port 0 picks one",
    )
    kafka_advertised_listener: str | None = Field(
        None, description="host:port Kafka clients are told to use for this broker; default the listener's"
    )
    kafka_listener_tls: bool = Field(
        False,
        description="serve the Kafka listener over TLS with the broker's [tls] certificate (SASL_SSL; SASL_PLAINTEXT off)",
    )
    kafka_max_request_bytes: int = Field(
        100 * MIB, ge=1024, description="largest Kafka request frame (Kafka's socket.request.max.bytes)"
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags > environment > TOML file > defaults; no dotenv or secrets files."""
        toml_file = _config_file.get()
        if toml_file is None:
            return (init_settings, env_settings)
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_file))

    @field_validator("log_level", mode="before")
    @classmethod
    def _lowercase_level(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("advertised_url", "inter_broker_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value.rstrip("/") if value else value

    @field_validator("kafka_listener", "kafka_advertised_listener")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None:
            split_host_port(value)
        return value

    @field_validator("metadata_store")
    @classmethod
    def _store_url(cls, value: str | None) -> str | None:
        if value is not None:
            parse_store_url(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> BrokerSettings:
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError(
                f"group_consumer_heartbeat_interval_ms ({self.group_consumer_heartbeat_interval_ms}) must be less "
                f"than group_consumer_session_timeout_ms ({self.group_consumer_session_timeout_ms})"
            )
        if self.broker_heartbeat_interval_ms >= self.broker_session_timeout_ms:
            raise ValueError(
                f"broker_heartbeat_interval_ms ({self.broker_heartbeat_interval_ms}) must be less than "
                f"broker_session_timeout_ms ({self.broker_session_timeout_ms})"
            )
        if self.replica_fetch_wait_max_ms >= self.replica_lag_time_max_ms:
            raise ValueError(
                f"replica_fetch_wait_max_ms ({self.replica_fetch_wait_max_ms}) must be less than "
                f"replica_lag_time_max_ms ({self.replica_lag_time_max_ms}), or healthy followers leave the ISR"
            )
        if self.security.authentication == "mtls" and self.tls.client_auth != "required":
            raise ValueError("security.authentication = 'mtls' needs tls.client_auth = 'required'")
        self._check_kafka_listener()
        self._unify_log_settings()
        return self

    def _check_kafka_listener(self) -> None:
        """The Kafka listener authenticates as the HTTP door does, so it never serves a secured broker openly.

        ``basic``: clients log in with SASL PLAIN or SCRAM-SHA-512 against the same users.
        ``mtls``: the client certificate names the user, so the listener must speak TLS.
        TLS on the listener uses the broker's own ``[tls]`` certificate and key.
        """
        if self.kafka_listener is None:
            return
        if self.kafka_listener_tls and not self.tls.enabled:
            raise ValueError("kafka_listener_tls needs tls.cert_file and tls.key_file (the broker's certificate)")
        if self.security.authentication == "mtls" and not self.kafka_listener_tls:
            raise ValueError(
                "security.authentication = 'mtls' needs kafka_listener_tls = true: "
                "the Kafka listener learns who a client is from its certificate"
            )
        host, _ = split_host_port(self.kafka_listener)
        if self.kafka_advertised_listener is None and host in WILDCARD_HOSTS:
            raise ValueError(
                f"kafka_listener {self.kafka_listener} listens on every address; "
                "set kafka_advertised_listener to the host:port clients should use"
            )

    def _unify_log_settings(self) -> None:
        """Make each ``log_*`` setting and its ``topic_defaults`` twin equal (see the module docstring)."""
        topic_given = self.topic_defaults.model_fields_set
        updates: dict[str, Any] = {}
        for log_field, topic_field in LOG_SETTING_TOPIC_FIELDS.items():
            log_value = getattr(self, log_field)
            topic_value = getattr(self.topic_defaults, topic_field)
            if log_field in self.model_fields_set and topic_field in topic_given and log_value != topic_value:
                raise ValueError(
                    f"{log_field} ({log_value}) and topic_defaults.{topic_field} ({topic_value}) "
                    "are the same setting; give one of them"
                )
            if topic_field in topic_given:
                object.__setattr__(self, log_field, topic_value)
            else:
                updates[topic_field] = log_value
        self.topic_defaults = self.topic_defaults.model_copy(update=updates)


WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # names the wildcard addresses, binds nothing


def split_host_port(address: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port`` too) into its parts; ``ValueError`` naming the address otherwise."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"'{address}' is not host:port (a port from 0 to 65535)")
    return host.removeprefix("[").removesuffix("]"), int(port)


def load_broker_settings(config_file: Path | None = None, **overrides: Any) -> BrokerSettings:
    """Build the settings from flags (``overrides``; ``None`` = not given), env, ``config_file``, defaults.

    Raises ``ConfigFileError`` when the file is missing or not TOML, ``UnknownSettingName``
    when the file or a ``HIGHWATER_*`` variable names nothing highwater reads, and
    pydantic's ``ValidationError`` for bad values (format it with ``format_settings_error``).
    """
    document = read_toml_file(Path(config_file)) if config_file is not None else {}
    _refuse_unknown_names(document, os.environ)
    token = _config_file.set(Path(config_file) if config_file is not None else None)
    try:
        return BrokerSettings(**given_flags(overrides))
    finally:
        _config_file.reset(token)


def given_flags(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The flags given: a flag's ``None`` means it was not, so the lower layers decide."""
    return {name: value for name, value in overrides.items() if value is not None}


def _refuse_unknown_names(document: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    """Stop on a misspelt variable or key, naming the name meant (see ``config.unknown_names``).

    A misspelt top-level variable would otherwise be dropped without a word, and the
    model's own refusal of a file key names only the wrong key.
    """
    refusals = [file_refusal(document, BrokerSettings), environment_refusal(environ, BrokerSettings)]
    found = [refusal for refusal in refusals if refusal is not None]
    if found:
        raise UnknownSettingName("; ".join(found))


def read_toml_file(path: Path) -> dict[str, Any]:
    """The file's document; ``ConfigFileError`` in one line when it cannot be read or is not TOML."""
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as error:
        raise ConfigFileError(f"cannot read config file {path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigFileError(f"config file {path} is not valid TOML: {error}") from None


__all__ = ["BrokerSettings", "ConfigFileError", "UnknownSettingName", "ValidationError", "load_broker_settings"]
