"""The configuration reference page, ``docs/configuration.md``, rendered from the settings models.

A hand-written reference drifts the day a field is added or a default changes, so every
row here is read from the models: the name, the type and its bounds, the default, and the
``Field(description=...)`` that is the setting's one written meaning (``broker.example.toml``
repeats the meanings for readers of that file; ``test_example_toml`` holds its keys and
values to the models). ``tests/unit/cli/test_configuration_reference.py`` fails when the
committed page is not what ``render_reference()`` returns.

Pure and deterministic: it reads the models and constants, never the environment or a
file, so the same models give the same bytes. Regenerate with ``REGENERATE``.

It lives with the commands, not in ``config/``: the Kafka broker config names of the
cluster-wide topic defaults and the ``compression.type`` values are owned by
``broker/topics``, which this page imports rather than copies, and ``config`` imports
nothing from ``broker``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from annotated_types import MinLen
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from broker.errors import InvalidConfig
from broker.topics.cluster_defaults import DYNAMIC_BROKER_CONFIGS
from broker.topics.configs import COMPRESSION_DOC, COMPRESSION_TYPE, COMPRESSION_TYPES, DEFAULT_COMPRESSION_TYPE
from config.broker import LOG_SETTING_TOPIC_FIELDS, BrokerSettings
from config.client import ClientSecuritySettings, ConsumerSettings, ProducerSettings
from config.field_shape import numeric_bound, without_none
from config.topic import TOPIC_CONFIG_NAMES, TopicConfig, TopicDefaults, parse_topic_configs
from config.variables import CLI_VARIABLES, CLIENT_PREFIXES

PAGE = "docs/configuration.md"
REGENERATE = f".venv/bin/python -m broker.cli.config_reference > {PAGE}"

INVALID_VALUE_EXAMPLE = "highwater: invalid setting log_segment_bytes: must be >= 1024 (got 10)"
UNKNOWN_KEY_EXAMPLE = "highwater: invalid setting tls.cert: unknown setting (did you mean tls.cert_file?)"
MISSPELT_VARIABLE = "HIGHWATER_LOG_RETENTON_MS"
UNKNOWN_VARIABLE_EXAMPLE = (
    f"highwater: unknown environment variable {MISSPELT_VARIABLE} (did you mean HIGHWATER_LOG_RETENTION_MS?)"
)
"""What the broker says for ``log_segment_bytes = 10``, for ``cert`` under ``[tls]`` and
for ``HIGHWATER_LOG_RETENTON_MS`` in its environment.

Written out rather than produced here because producing them would read the environment;
the test checks them against what ``load_broker_settings`` really raises.
"""
BAD_TOPIC_CONFIG = {"retention.ms": "a week"}
"""The topic config the page shows being refused (the refusal is produced, not written out)."""

_TYPE_NAMES: dict[Any, str] = {int: "integer", str: "string", bool: "boolean", Path: "path", SecretStr: "secret string"}
_OPERATOR_SIGNS = {">=": "≥", "<=": "≤"}
_DURATION_UNITS = ((86_400_000, "day"), (3_600_000, "h"), (60_000, "min"), (1000, "s"))
_SIZE_UNITS = ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB"))
NOT_APPLICABLE = "—"


def render_reference() -> str:
    """The whole page, ending in one newline."""
    sections = [
        _preamble(),
        _sources(),
        _errors(),
        _broker_section(),
        _topic_section(),
        _client_section("Producer", ProducerSettings),
        _client_section("Consumer", ConsumerSettings),
    ]
    return "\n\n".join(section.strip("\n") for section in sections) + "\n"


def env_var(settings: type[BaseSettings], *path: str) -> str:
    """The environment variable pydantic-settings reads for the field at ``path`` (a table, then its key)."""
    config = settings.model_config
    delimiter = config.get("env_nested_delimiter")
    if len(path) > 1 and not delimiter:
        raise ValueError(f"{settings.__name__} reads no nested environment variables")
    return (config.get("env_prefix", "") + (delimiter or "").join(path)).upper()


def nested_tables(settings: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The fields that are TOML tables of their own (``[topic_defaults]``, ``[security]`` ...) and their models."""
    return {
        name: field.annotation
        for name, field in settings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
    }


def meaning(owner: type[BaseModel], name: str) -> str:
    """A field's description; a field without one is a bug the page refuses to hide."""
    description = owner.model_fields[name].description
    if not description or not description.strip():
        raise ValueError(f"{owner.__name__}.{name} has no description")
    return description


def type_text(field: FieldInfo) -> str:
    """The value's kind and bounds, e.g. ``integer, ≥ 1024, ≤ 2147483647``; ``or None`` when None is allowed."""
    annotation, optional = without_none(field.annotation)
    text = ", ".join([_kind(annotation), *(_bound(constraint) for constraint in field.metadata)])
    return f"{text}; or `None`" if optional and field.default is not None else text


def toml_default(name: str, field: FieldInfo) -> str:
    """The default as it is written in the TOML file (or ``unset``), with a readable size or duration."""
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, int):
        return _number(name, value)
    if isinstance(value, (str, Path)):
        return f'`"{value}"`'
    if isinstance(value, list) and not value:
        return "`[]`"
    raise TypeError(f"no TOML form for the default of {name}: {value!r}")


def python_default(name: str, field: FieldInfo) -> str:
    """The default as a Python keyword argument, with a readable size or duration."""
    value = field.get_default(call_default_factory=True)
    if isinstance(value, int) and not isinstance(value, bool):
        return _number(name, value)
    return f"`{value!r}`"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A GitHub-flavoured table; ``|`` inside a cell is escaped so it cannot split the cell."""
    lines = [_row(headers), _row(["---"] * len(headers))]
    lines.extend(_row(row) for row in rows)
    return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"


def _kind(annotation: Any) -> str:
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(f"`{choice}`" for choice in get_args(annotation))
    if get_origin(annotation) is list:
        return f"list of {_kind(get_args(annotation)[0])}s"
    if annotation in _TYPE_NAMES:
        return _TYPE_NAMES[annotation]
    raise TypeError(f"no name for the type {annotation}")


def _bound(constraint: Any) -> str:
    bound = numeric_bound(constraint)
    if bound is not None:
        operator, value = bound
        return f"{_OPERATOR_SIGNS.get(operator, operator)} {value}"
    if isinstance(constraint, MinLen):
        return "not empty" if constraint.min_length == 1 else f"at least {constraint.min_length} characters"
    raise TypeError(f"no words for the constraint {constraint!r}")


def _number(name: str, value: int) -> str:
    """``604800000`` (7 days): the exact value to write, and what it amounts to where that is not obvious."""
    hint = _duration(value) if _is_duration(name) else _size(value) if _is_size(name) else None
    return f"`{value}`" + (f" ({hint})" if hint else "")


def _is_duration(name: str) -> bool:
    return name.endswith("_ms") or "_ms_" in name


def _is_size(name: str) -> bool:
    return "bytes" in name or name.endswith(("_size", "_memory"))


def _duration(value: int) -> str | None:
    for unit_ms, unit in _DURATION_UNITS:
        if value >= unit_ms and value % unit_ms == 0:
            count = value // unit_ms
            plural = "s" if unit == "day" and count != 1 else ""
            return f"{count} {unit}{plural}"
    return None


def _size(value: int) -> str | None:
    for unit_bytes, unit in _SIZE_UNITS:
        if value >= unit_bytes and value % unit_bytes == 0:
            return f"{value // unit_bytes} {unit}"
    return None


def _preamble() -> str:
    return f"""
<!-- generated from the settings models in config/ by broker/cli/config_reference.py; do not edit by hand; regenerate with: {REGENERATE} -->

# Configuration reference

Every setting of the broker, of a topic and of the Python clients: its name, type,
default and meaning. Names carry their units: `_ms` is milliseconds, `_bytes` is bytes.
This page is generated from the settings models (`config/`); a test fails when the two
disagree.
"""


def _sources() -> str:
    broker = BrokerSettings
    return f"""
## Where a setting comes from

A broker (`highwater serve`) takes each setting from the first of these that gives it:

1. a command-line flag, for the few settings that have one (`highwater serve --help` lists them);
2. the environment: `{env_var(broker, "node_id")}` for `node_id`, a table's settings joined with
   a double underscore, as in `{env_var(broker, "topic_defaults", "retention_ms")}=3600000`.
   A list is written as JSON: `{env_var(broker, "security", "super_users")}='["User:admin"]'`;
3. the TOML file given with `--config` (`config/broker.example.toml` lists every setting
   with its default);
4. the default shown below.

`highwater serve --print-config` prints the settings a broker would run with as TOML,
each followed by where it came from (`flag`, `environment`, `file` or `default`), and
exits without starting it. Unset settings and secrets are printed commented out, so
the output is itself a config file for the same settings.

The `log_*` settings are Kafka's broker names for settings of `[topic_defaults]`
(`log_retention_ms` is `topic_defaults.retention_ms`): each pair is one setting under two
names. Give either; giving both with different values is refused.

A topic's config is, highest first, the one given when the topic was created or later
altered; the cluster-wide dynamic config, set at runtime on any broker (HTTP
`/v3/clusters/{{cluster_id}}/broker-configs`, or the Kafka listener's broker resource
with the empty name) and applied by every broker; the broker's `[topic_defaults]`
setting; the default. See [Topic configs](#topic-configs).

A `Producer` or `Consumer` takes its settings as keyword arguments; one not given is
read from the environment (`{env_var(ProducerSettings, "acks")}=1`,
`{env_var(ConsumerSettings, "group_id")}=billing`), else it has its default.
"""


def _errors() -> str:
    refusal = _topic_refusal()
    return f"""
## How a wrong setting is reported

The broker checks every setting before it starts. A value out of range or of the wrong
type, a key no setting has (in the file or inside a table), or two settings that
contradict each other stop it at once with one line naming each wrong setting and exit
status 2. An unknown name comes with the closest known one:

```text
{INVALID_VALUE_EXAMPLE}
{UNKNOWN_KEY_EXAMPLE}
{UNKNOWN_VARIABLE_EXAMPLE}
```

An environment variable starting `HIGHWATER_` that no highwater program reads is refused
the same way, at the top level (`{MISSPELT_VARIABLE}`) as inside a table
(`{env_var(BrokerSettings, "tls", "cert")}`), never ignored. Besides the broker's own,
the variables of the programs that share its environment are allowed: the command-line
client's ({_variable_list()}) and the Python clients' ({_prefix_list()}).

A topic config is checked when the topic is created or altered: an unknown name or a
bad value is refused, naming it, with HTTP {InvalidConfig.http_status} `{InvalidConfig.name}`
(error code {InvalidConfig.error_code}), and nothing changes. For `{_inline(BAD_TOPIC_CONFIG)}`:

```text
{refusal}
```

A `Producer` or `Consumer` checks its settings when it is built, so a misconfigured
client fails before it sends anything: a wrong value or an unknown keyword argument
raises an error naming it, and so do Kafka's rules between settings (idempotence needs
`acks="all"`, a heartbeat shorter than the session, ...). Environment variables with a
client's prefix that name no setting are ignored.
"""


def _variable_list() -> str:
    return ", ".join(f"`{name}`" for name in CLI_VARIABLES)


def _prefix_list() -> str:
    return ", ".join(f"`{prefix}*`" for prefix in CLIENT_PREFIXES)


def _inline(configs: dict[str, str]) -> str:
    return ", ".join(f"{name}={value}" for name, value in configs.items())


def _topic_refusal() -> str:
    try:
        parse_topic_configs(BAD_TOPIC_CONFIG, TopicConfig())
    except InvalidConfig as error:
        return str(error)
    raise ValueError(f"{BAD_TOPIC_CONFIG} was accepted; the page needs a config that is refused")


def _broker_section() -> str:
    tables = nested_tables(BrokerSettings)
    top_level = [name for name in BrokerSettings.model_fields if name not in tables]
    parts = [
        "## Broker settings",
        "Top-level keys of the TOML file.",
        _broker_table(BrokerSettings, (), top_level),
    ]
    for table, model in tables.items():
        parts.extend(_broker_table_section(table, model))
    return "\n\n".join(parts)


def _broker_table_section(table: str, model: type[BaseModel]) -> list[str]:
    intro = meaning(BrokerSettings, table)
    return [
        f"### `[{table}]`",
        f"{intro[:1].upper()}{intro[1:]}.",
        _broker_table(model, (table,), list(model.model_fields)),
    ]


def _broker_table(model: type[BaseModel], path: tuple[str, ...], names: list[str]) -> str:
    rows = [
        (
            f"`{name}`",
            f"`{env_var(BrokerSettings, *path, name)}`",
            type_text(model.model_fields[name]),
            toml_default(name, model.model_fields[name]),
            meaning(model, name),
        )
        for name in names
    ]
    return markdown_table(("Key", "Environment variable", "Type", "Default", "Meaning"), rows)


def _topic_section() -> str:
    rows = [_topic_row(name, field) for name, field in TOPIC_CONFIG_NAMES.items()]
    rows.append(_compression_row())
    return "\n\n".join(
        [
            "## Topic configs",
            "Kafka's names, given as strings (`true`/`false` for a boolean): in the `configs` of a\n"
            "create-topic request, `highwater topics create NAME --config retention.ms=3600000`, or a\n"
            "later alter. Each falls back to a broker setting, which a cluster-wide config of the\n"
            "name shown overrides at runtime. The default is the broker setting's.",
            markdown_table(
                ("Topic config", "Type", "Default", "Broker setting", "Cluster-wide config", "Meaning"), rows
            ),
            _cluster_only_configs(),
        ]
    )


def _cluster_name(field: str) -> str:
    names = [name for name, target in DYNAMIC_BROKER_CONFIGS.items() if target == field]
    return ", ".join(f"`{name}`" for name in sorted(names)) or NOT_APPLICABLE


def _topic_row(name: str, field: str) -> tuple[str, ...]:
    twins = [log_field for log_field, topic_field in LOG_SETTING_TOPIC_FIELDS.items() if topic_field == field]
    broker_setting = " or ".join([f"`topic_defaults.{field}`", *(f"`{twin}`" for twin in twins)])
    model_field = TopicConfig.model_fields[field]
    return (
        f"`{name}`",
        type_text(model_field),
        toml_default(field, model_field),
        broker_setting,
        _cluster_name(field),
        meaning(TopicConfig, field),
    )


def _compression_row() -> tuple[str, ...]:
    choices = ", ".join(f"`{choice}`" for choice in COMPRESSION_TYPES)
    default = f'`"{DEFAULT_COMPRESSION_TYPE}"`'
    return (f"`{COMPRESSION_TYPE}`", f"one of {choices}", default, NOT_APPLICABLE, NOT_APPLICABLE, COMPRESSION_DOC)


def _cluster_only_configs() -> str:
    """The cluster-wide configs that set a creation default rather than a topic config."""
    lines = [
        f"- `{name}` sets `topic_defaults.{field}`: {meaning(TopicDefaults, field)}."
        for name, field in sorted(DYNAMIC_BROKER_CONFIGS.items())
        if field not in TopicConfig.model_fields
    ]
    return "These cluster-wide configs set a default of topic creation, not a topic config:\n\n" + "\n".join(lines)


def _client_section(title: str, settings: type[BaseSettings]) -> str:
    shared = set(ClientSecuritySettings.model_fields)
    names = [name for name in settings.model_fields if name not in shared] + list(ClientSecuritySettings.model_fields)
    rows = [
        (
            f"`{name}`",
            f"`{env_var(settings, name)}`",
            type_text(settings.model_fields[name]),
            python_default(name, settings.model_fields[name]),
            meaning(settings, name),
        )
        for name in names
    ]
    servers = env_var(settings, "bootstrap_servers")
    prefix = settings.model_config.get("env_prefix", "")
    return "\n\n".join(
        [
            f"## {title}",
            f"`{title}(servers, **settings)`: keyword arguments, else `{prefix}<NAME>` from the\n"
            f"environment, else the default. `servers`, the first argument, is `bootstrap_servers`;\n"
            f"as it is always given, `{servers}` applies only to a\n"
            f"`{settings.__name__}` built without it. The last {len(shared)} rows are the security\n"
            "settings both clients share.",
            markdown_table(("Keyword", "Environment variable", "Type", "Default", "Meaning"), rows),
        ]
    )


if __name__ == "__main__":
    sys.stdout.write(render_reference())
