"""Options of the ``highwater`` source and sink, checked once, at ``load()``/``start()``.

Spark hands a data source its options as a case-insensitive dict of strings. Every
option is parsed here into frozen, picklable dataclasses, so a typo or a malformed
value fails before a query starts, with a message that names the option, instead of
failing later inside an executor. Names follow Spark's Kafka source where they apply.

Invariants of a parsed ``SourceOptions``: exactly one of ``subscribe``,
``subscribe_pattern`` and ``assign`` is set; every limit is positive.

Both take the security options every highwater client takes, under the same names:
``username``/``password`` (HTTP Basic) and ``ssl_ca_file``/``ssl_cert_file``/``ssl_key_file``
for ``https://`` servers. The files are loaded once at ``load()``/``start()`` so a bad
path fails there; they must exist at the same path on every executor, which loads them
again. The password travels with the input partitions (as Spark's Kafka source ships its
JAAS settings) and is kept out of every ``repr``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from broker.client.security import ClientSecurity
from broker.client.types import TopicPartition
from broker.tls import client_ssl_context
from spark_connector.kafka_security import KAFKA_SECURITY_NAMES, KafkaSecurityError, kafka_security

EARLIEST = -2
"""Kafka's ``startingOffsets`` JSON sentinel for "the log start offset"."""
LATEST = -1
"""Kafka's sentinel for "the high watermark" (the end of what a reader may see)."""

SPARK_OWNED_OPTIONS = frozenset({"path", "checkpointlocation"})
"""Options Spark itself passes along to every data source; accepted and ignored."""
SECURITY_NAMES = ("username", "password", "ssl_ca_file", "ssl_cert_file", "ssl_key_file")
SECURITY_OPTIONS = frozenset(SECURITY_NAMES)
CLIENT_SECURITY_NAMES = (*SECURITY_NAMES, *KAFKA_SECURITY_NAMES)
"""highwater's own security options and the Kafka clients' settings read as them (``kafka_security``)."""
SOURCE_NAMES = (
    "kafka.bootstrap.servers",
    "subscribe",
    "subscribePattern",
    "assign",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy",
    "endingTimestamp",
    "endingOffsetsByTimestamp",
    "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger",
    "maxTriggerDelay",
    "minPartitions",
    "maxRecordsPerPartition",
    "failOnDataLoss",
    "includeHeaders",
    "pollTimeoutMs",
    "fetchMaxBytes",
    "kafka.isolation.level",
    "kafka.group.id",
    "groupIdPrefix",
    *CLIENT_SECURITY_NAMES,
)
"""Every source option as documented (Spark's Kafka source's name where it has one)."""
SINK_NAMES = (
    "kafka.bootstrap.servers",
    "topic",
    "lingerMs",
    "batchSizeBytes",
    "deliveryGuarantee",
    "transactionalIdPrefix",
    "transactionTimeoutMs",
    *CLIENT_SECURITY_NAMES,
)
ALIASES = {
    "servers": "kafka.bootstrap.servers",
    "maxRecordsPerTrigger": "maxOffsetsPerTrigger",
    "isolationLevel": "kafka.isolation.level",
    "kafkaConsumer.pollTimeoutMs": "pollTimeoutMs",
}
"""Other names of options: highwater's first names where Spark's Kafka source names an option
otherwise (each still works), and Spark's own where highwater's name came first."""
DOCUMENTED = {name.lower(): name for name in (*SOURCE_NAMES, *SINK_NAMES)}


def known_name(name: str) -> str:
    """An option's name as documented (``startingoffsets`` -> ``startingOffsets``); else ``name``."""
    return DOCUMENTED.get(name.lower(), name)


EXACTLY_ONCE = "exactly_once"
AT_LEAST_ONCE = "at_least_once"
DELIVERY_GUARANTEES = (EXACTLY_ONCE, AT_LEAST_ONCE)
DEFAULT_TRANSACTION_TIMEOUT_MS = 600_000
"""A task's transaction stays open until Spark commits its batch: room for slow batches, under the
brokers' ``transaction_max_timeout_ms`` (15 min by default)."""


DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60_000
"""Spark's ``maxTriggerDelay`` default, 15m."""
TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
"""The suffixes of Spark's time strings (``JavaUtils.timeStringAs``); a bare number is milliseconds."""


class OptionError(ValueError):
    """A missing, unknown or malformed option; the message names it."""


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """``earliest``, ``latest`` or explicit offsets; ``per_partition`` may hold the sentinels."""

    kind: str
    per_partition: tuple[tuple[TopicPartition, int], ...] = ()

    def offset_for(self, topic_partition: TopicPartition) -> int:
        """The requested offset or sentinel; partitions a JSON spec omits start at earliest."""
        if self.kind == "earliest":
            return EARLIEST
        if self.kind == "latest":
            return LATEST
        return dict(self.per_partition).get(topic_partition, EARLIEST)


@dataclass(frozen=True, slots=True)
class TimestampSpec:
    """Where to start or end by time (ms since the epoch): one timestamp for every partition
    (``startingTimestamp``) or one per partition (``startingOffsetsByTimestamp``)."""

    everywhere: int | None = None
    per_partition: tuple[tuple[TopicPartition, int], ...] = ()

    def timestamp_for(self, topic_partition: TopicPartition) -> int | None:
        """The partition's timestamp; None when a per-partition spec leaves it out."""
        if self.everywhere is not None:
            return self.everywhere
        return dict(self.per_partition).get(topic_partition)


@dataclass(frozen=True, slots=True)
class SourceOptions:
    servers: tuple[str, ...]
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[TopicPartition, ...] = ()
    starting_offsets: OffsetSpec = OffsetSpec("latest")
    ending_offsets: OffsetSpec = OffsetSpec("latest")
    starting_timestamps: TimestampSpec | None = None
    """``startingTimestamp`` or ``startingOffsetsByTimestamp``, which take precedence over ``startingOffsets``."""
    ending_timestamps: TimestampSpec | None = None
    """``endingTimestamp`` or ``endingOffsetsByTimestamp`` (batch reads), over ``endingOffsets``."""
    past_the_end_latest: bool = False
    """``startingOffsetsByTimestampStrategy=latest``: a starting timestamp after every record starts at the
    end; by default (``error``) the read fails."""
    max_records_per_trigger: int | None = None
    """``maxOffsetsPerTrigger`` (alias ``maxRecordsPerTrigger``): rows per micro-batch at most."""
    min_records_per_trigger: int | None = None
    """``minOffsetsPerTrigger``: a micro-batch waits until this many rows are available, or
    until ``max_trigger_delay_ms`` has passed since the last one (``offsets.delays_batch``)."""
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    min_partitions: int | None = None
    """``minPartitions``: at least this many read tasks, large ranges split in proportion to their size."""
    max_records_per_partition: int = 250_000
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000
    fetch_max_bytes: int = 8 * 1024 * 1024
    read_committed: bool = False
    """``isolationLevel`` (or Spark's ``kafka.isolation.level``) ``read_committed``: up to the last
    stable offset, aborted transactions' records dropped."""
    lag_group: str | None = None
    """The consumer group a streaming query's processed offsets are committed to, so its lag shows
    where every consumer's does (``kafka.group.id``, else ``groupIdPrefix`` and a digest of the
    subscription; None: nothing is committed, as Spark's Kafka source commits nothing)."""
    security: ClientSecurity = field(default_factory=ClientSecurity)

    def matches(self, topic: str) -> bool:
        """Whether a topic name belongs to the subscription (``assign`` names its topics)."""
        if self.subscribe_pattern is not None:
            return re.fullmatch(self.subscribe_pattern, topic) is not None
        if self.subscribe:
            return topic in self.subscribe
        return any(tp.topic == topic for tp in self.assign)


@dataclass(frozen=True, slots=True)
class SinkOptions:
    servers: tuple[str, ...]
    topic: str | None = None
    linger_ms: int = 5
    batch_size_bytes: int = 1024 * 1024
    security: ClientSecurity = field(default_factory=ClientSecurity)
    delivery_guarantee: str = EXACTLY_ONCE
    transactional_id_prefix: str | None = None
    """None: derived from the streaming query's id (stable across its restarts), or per batch write."""
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS

    @property
    def exactly_once(self) -> bool:
        return self.delivery_guarantee == EXACTLY_ONCE

    def topic_of(self, fields: Mapping[str, object]) -> str:
        """A row's topic: its ``topic`` column, else the ``topic`` option."""
        topic = fields.get("topic") or self.topic
        if topic is None:
            raise OptionError("a row has a null 'topic' and option 'topic' is not set")
        return str(topic)


class GivenOptions(dict[str, str]):
    """Options by lower-cased canonical name, remembering the alias each was given under (errors name it)."""

    def __init__(self) -> None:
        super().__init__()
        self.spelled: dict[str, str] = {}

    def shown(self, name: str) -> str:
        """The alias ``name`` was given under, else ``name`` as documented (Spark lower-cases every key)."""
        return self.spelled.get(name.lower(), known_name(name))


def _canonical(raw: Mapping[str, str], names: tuple[str, ...]) -> GivenOptions:
    """The options by lower-cased canonical name (Spark's names are case-insensitive): an alias
    becomes its option, the two must agree when both are given, and an unknown name fails,
    suggesting the known name it is closest to."""
    known = {name.lower(): name for name in names}
    aliases = {alias.lower(): target.lower() for alias, target in ALIASES.items() if target.lower() in known}
    options = GivenOptions()
    given_as = options.spelled
    for key, value in raw.items():
        name = str(key).lower()
        if name in SPARK_OWNED_OPTIONS:
            continue
        canonical = aliases.get(name, name)
        if canonical not in known:
            raise OptionError(_unknown(str(key), [*names, *(a for a, t in ALIASES.items() if t in names)]))
        if canonical in options and options[canonical].strip() != str(value).strip():
            raise OptionError(f"options {options.shown(canonical)!r} and {str(key)!r} disagree; give one")
        options[canonical] = str(value)
        if name != canonical:
            given_as[canonical] = str(key)
    return options


def _unknown(name: str, known: list[str]) -> str:
    message = f"unknown option {name!r}"
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=1, cutoff=0.75)
    if close:
        suggestion = next(k for k in known if k.lower() == close[0])
        return f"{message}; did you mean {suggestion!r}?"
    return f"{message}; known options: {', '.join(known)}"


def _servers(options: GivenOptions, tls: bool) -> tuple[str, ...]:
    """The brokers' HTTP listeners: ``http(s)://host:port``, or ``host:port`` read as ``http://``
    (``https://`` when ``tls``: ``kafka.security.protocol`` SSL or SASL_SSL)."""
    given = [url.strip().rstrip("/") for url in options.get("kafka.bootstrap.servers", "").split(",") if url.strip()]
    if not given:
        raise OptionError(
            "option 'kafka.bootstrap.servers' (or 'servers') is required: the brokers' HTTP listeners, "
            "comma-separated (host:port or http://host:port)"
        )
    scheme = "https" if tls else "http"
    urls = tuple(url if "://" in url else f"{scheme}://{url}" for url in given)
    shown = options.shown("kafka.bootstrap.servers")
    for url in urls:
        if not re.fullmatch(r"https?://[^/\s]+", url):
            raise OptionError(f"option {shown!r}: {url!r} is not a host:port or http://host:port")
        if tls and not url.startswith("https://"):
            raise OptionError(f"option {shown!r}: {url!r} is not https:// but 'kafka.security.protocol' asks for TLS")
    return urls


def _kafka_security(options: GivenOptions) -> tuple[dict[str, str], bool]:
    """What the Kafka clients' security settings mean here (``kafka_security``); a user and password
    given both ways must agree."""
    try:
        credentials, tls = kafka_security(options)
    except KafkaSecurityError as error:
        raise OptionError(str(error)) from None
    for name, value in credentials.items():
        if options.get(name, value).strip() != value:
            raise OptionError(f"options {name!r} and 'kafka.sasl.jaas.config' disagree; give one")
    return credentials, tls


def _security(options: dict[str, str], from_kafka: dict[str, str]) -> ClientSecurity:
    """The security options, checked as the clients check them; the files are loaded once here."""
    given = {name: options[name].strip() for name in SECURITY_OPTIONS if options.get(name, "").strip()}
    given.update(from_kafka)
    security = ClientSecurity(
        username=given.get("username"),
        password=given.get("password"),
        **{name: Path(given[name]) for name in ("ssl_ca_file", "ssl_cert_file", "ssl_key_file") if name in given},
    )
    if (security.username is None) != (security.password is None):
        raise OptionError("options 'username' and 'password' go together")
    if security.username is not None and ":" in security.username:
        raise OptionError("option 'username' may not contain ':'")
    if security.uses_tls_files:
        try:
            client_ssl_context(security.ssl_ca_file, security.ssl_cert_file, security.ssl_key_file)
        except ValueError as error:
            raise OptionError(f"TLS options: {error}") from None
    return security


def _positive_int(options: GivenOptions, name: str, default: int | None) -> int | None:
    text = options.get(name.lower())
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise OptionError(f"option {options.shown(name)!r} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise OptionError(f"option {options.shown(name)!r} must be a positive integer, got {value}")
    return value


def _duration_ms(options: GivenOptions, name: str, default_ms: int) -> int:
    """A Spark time string (``15m``, ``30s``, ``500ms``, ``500``) in milliseconds."""
    text = options.get(name.lower())
    if text is None:
        return default_ms
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", text.lower())
    if match is None or match.group(2) not in ("", *TIME_UNITS_MS):
        raise OptionError(
            f"option {options.shown(name)!r} must be a duration like 15m, 30s or 500ms "
            f"(units {', '.join(TIME_UNITS_MS)}), got {text!r}"
        )
    return int(int(match.group(1)) * TIME_UNITS_MS[match.group(2) or "ms"])


def _admission(options: GivenOptions) -> tuple[int | None, int | None]:
    """``maxOffsetsPerTrigger`` and ``minOffsetsPerTrigger``; the minimum may not exceed the maximum (as in Spark)."""
    maximum = _positive_int(options, "maxOffsetsPerTrigger", None)
    minimum = _positive_int(options, "minOffsetsPerTrigger", None)
    if minimum is not None and maximum is not None and minimum > maximum:
        raise OptionError(
            f"option 'minOffsetsPerTrigger' ({minimum}) is higher than "
            f"{options.shown('maxOffsetsPerTrigger')!r} ({maximum})"
        )
    return maximum, minimum


def _lag_group(options: GivenOptions, servers: tuple[str, ...]) -> str | None:
    """``kafka.group.id`` as given, else ``<groupIdPrefix>-<digest>``: the digest of the servers and
    the subscription, so the same query keeps its group across restarts and two queries reading
    different topics get different ones."""
    for name in ("kafka.group.id", "groupIdPrefix"):
        if name.lower() in options and not options[name.lower()].strip():
            raise OptionError(f"option {options.shown(name)!r} is empty")
    if "kafka.group.id" in options:
        return options["kafka.group.id"].strip()
    prefix = options.get("groupidprefix")
    if prefix is None:
        return None
    subscription = [options.get(name, "") for name in ("subscribe", "subscribepattern", "assign")]
    digest = hashlib.sha256("\n".join([*servers, *subscription]).encode()).hexdigest()[:12]
    return f"{prefix.strip()}-{digest}"


def _bool(options: GivenOptions, name: str, default: bool) -> bool:
    text = options.get(name.lower())
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise OptionError(f"option {options.shown(name)!r} must be true or false, got {text!r}")
    return text.strip().lower() == "true"


def _offset_spec(options: GivenOptions, name: str, default: str, allowed: tuple[str, ...]) -> OffsetSpec:
    text = options.get(name.lower(), default).strip()
    if text.lower() in allowed:
        return OffsetSpec(text.lower())
    pairs = _per_partition(text)
    if pairs is None:
        raise OptionError(
            f"option {options.shown(name)!r} must be {' or '.join(allowed)} or JSON like "
            f'{{"topic": {{"0": 23, "1": -2}}}}, got {text!r}'
        )
    for topic_partition, offset in pairs:
        if offset < EARLIEST:
            raise OptionError(
                f"option {options.shown(name)!r}: offset {offset} of {topic_partition} is below -2 (earliest)"
            )
    return OffsetSpec("json", pairs)


def _timestamps(options: GivenOptions, single: str, per_partition: str) -> TimestampSpec | None:
    """Spark's precedence: the single timestamp over the per-partition JSON."""
    if single.lower() in options:
        text = options[single.lower()].strip()
        if not text.isdigit():
            raise OptionError(f"option {options.shown(single)!r} must be ms since the epoch, got {text!r}")
        return TimestampSpec(everywhere=int(text))
    if per_partition.lower() not in options:
        return None
    text = options[per_partition.lower()].strip()
    pairs = _per_partition(text)
    if pairs is None:
        raise OptionError(
            f"option {options.shown(per_partition)!r} must be JSON like "
            f'{{"topic": {{"0": 1700000000000}}}}, got {text!r}'
        )
    if any(timestamp < 0 for _, timestamp in pairs):
        raise OptionError(f"option {options.shown(per_partition)!r}: a timestamp is negative")
    return TimestampSpec(per_partition=pairs)


def _per_partition(text: str) -> tuple[tuple[TopicPartition, int], ...] | None:
    """``{"topic": {"0": n, ...}, ...}`` as (partition, n) pairs in partition order; None when it is not that."""
    try:
        parsed = json.loads(text)
        return tuple(
            sorted(
                (TopicPartition(str(topic), int(partition)), int(value))
                for topic, partitions in parsed.items()
                for partition, value in partitions.items()
            )
        )
    except (ValueError, AttributeError, TypeError):
        return None


def _choice(options: GivenOptions, name: str, allowed: tuple[str, str], default: str) -> str:
    """One of ``allowed`` (case-insensitive), ``default`` when not given."""
    value = options.get(name.lower(), default).strip().lower()
    if value not in allowed:
        raise OptionError(f"option {options.shown(name)!r} must be {' or '.join(allowed)}, got {value!r}")
    return value


def _assign(text: str) -> tuple[TopicPartition, ...]:
    try:
        parsed = json.loads(text)
        assigned = tuple(sorted(TopicPartition(str(t), int(p)) for t, parts in parsed.items() for p in parts))
    except (ValueError, AttributeError, TypeError):
        raise OptionError(f"option 'assign' must be JSON like {{\"topic\": [0, 1]}}, got {text!r}") from None
    if not assigned:
        raise OptionError("option 'assign' names no partitions")
    return assigned


def parse_source_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate the options of a read; ``OptionError`` naming the first bad option."""
    options = _canonical(raw, SOURCE_NAMES)
    chosen = [name for name in ("subscribe", "subscribepattern", "assign") if name in options]
    if len(chosen) != 1:
        raise OptionError("exactly one of the options 'subscribe', 'subscribePattern' or 'assign' is required")
    subscribe = tuple(t.strip() for t in options.get("subscribe", "").split(",") if t.strip())
    if "subscribe" in options and not subscribe:
        raise OptionError("option 'subscribe' names no topic")
    pattern = options.get("subscribepattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as error:
            raise OptionError(f"option 'subscribePattern' is not a regular expression: {error}") from None
    for ending in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        if streaming and ending.lower() in options:
            raise OptionError(f"option {options.shown(ending)!r} applies to batch reads only")
    max_per_trigger, min_per_trigger = _admission(options)
    credentials, tls = _kafka_security(options)
    servers = _servers(options, tls)
    return SourceOptions(
        servers=servers,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=_assign(options["assign"]) if "assign" in options else (),
        starting_offsets=_offset_spec(
            options, "startingOffsets", "latest" if streaming else "earliest", ("earliest", "latest")
        ),
        ending_offsets=_offset_spec(options, "endingOffsets", "latest", ("latest",)),
        starting_timestamps=_timestamps(options, "startingTimestamp", "startingOffsetsByTimestamp"),
        ending_timestamps=_timestamps(options, "endingTimestamp", "endingOffsetsByTimestamp"),
        past_the_end_latest=_choice(options, "startingOffsetsByTimestampStrategy", ("error", "latest"), "error")
        == "latest",
        max_records_per_trigger=max_per_trigger,
        min_records_per_trigger=min_per_trigger,
        max_trigger_delay_ms=_duration_ms(options, "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY_MS),
        min_partitions=_positive_int(options, "minPartitions", None),
        max_records_per_partition=_positive_int(options, "maxRecordsPerPartition", 250_000) or 250_000,
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        include_headers=_bool(options, "includeHeaders", False),
        poll_timeout_ms=_positive_int(options, "pollTimeoutMs", 120_000) or 120_000,
        fetch_max_bytes=_positive_int(options, "fetchMaxBytes", 8 * 1024 * 1024) or 8 * 1024 * 1024,
        read_committed=_choice(
            options, "kafka.isolation.level", ("read_committed", "read_uncommitted"), "read_uncommitted"
        )
        == "read_committed",
        lag_group=_lag_group(options, servers),
        security=_security(options, credentials),
    )


def parse_sink_options(raw: Mapping[str, str]) -> SinkOptions:
    """Validate the options of a write; the ``topic`` may instead come from a ``topic`` column."""
    options = _canonical(raw, SINK_NAMES)
    topic = options.get("topic")
    if topic is not None and not topic.strip():
        raise OptionError("option 'topic' is empty")
    guarantee = options.get("deliveryguarantee", EXACTLY_ONCE).strip().lower()
    if guarantee not in DELIVERY_GUARANTEES:
        raise OptionError(f"option 'deliveryGuarantee' must be one of {list(DELIVERY_GUARANTEES)}, got {guarantee!r}")
    prefix = options.get("transactionalidprefix")
    if prefix is not None and not prefix.strip():
        raise OptionError("option 'transactionalIdPrefix' is empty")
    credentials, tls = _kafka_security(options)
    return SinkOptions(
        servers=_servers(options, tls),
        topic=topic.strip() if topic else None,
        linger_ms=_positive_int(options, "lingerMs", 5) or 5,
        batch_size_bytes=_positive_int(options, "batchSizeBytes", 1024 * 1024) or 1024 * 1024,
        security=_security(options, credentials),
        delivery_guarantee=guarantee,
        transactional_id_prefix=prefix.strip() if prefix else None,
        transaction_timeout_ms=_positive_int(options, "transactionTimeoutMs", DEFAULT_TRANSACTION_TIMEOUT_MS)
        or DEFAULT_TRANSACTION_TIMEOUT_MS,
    )
