"""Where each effective setting came from, written as TOML (``highwater serve --print-config``).

A broker's settings are layered (flags > environment > the ``--config`` file > defaults,
``config.broker``), so "why does it keep seven days?" has four possible answers. This
names, for every setting, its effective value and the layer that gave it: ``flag``,
``environment``, ``file`` or ``default``. A ``log_*`` setting and its ``topic_defaults``
twin are one setting, so either takes its source from whichever of the two was given.

The text is a TOML file whose comments are the sources: one ``key = value  # source``
a line, then each table under ``[table]``. An unset setting (TOML has no null) and a
secret (a ``SecretStr``: its value is never printed) are commented out, so the output
is a config file that gives a broker the same settings.

Pure: the layers arrive as the mappings pydantic-settings merges, and the answer is text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, SecretStr

from config.broker import LOG_SETTING_TOPIC_FIELDS, BrokerSettings
from config.unknown_names import table_model

Source = Literal["flag", "environment", "file", "default"]
SettingPath = tuple[str, ...]

HEADER = "# highwater serve --print-config: the effective settings, each followed by where it came from"
UNSET = "(unset)"
HIDDEN = "(secret, not shown)"

BROKER_TWINS: dict[SettingPath, SettingPath] = {
    **{(log,): ("topic_defaults", topic) for log, topic in LOG_SETTING_TOPIC_FIELDS.items()},
    **{("topic_defaults", topic): (log,) for log, topic in LOG_SETTING_TOPIC_FIELDS.items()},
}
"""Each ``log_*`` setting and its ``topic_defaults`` twin, both ways: one setting under two names."""


@dataclass(frozen=True)
class Layers:
    """What each source gave, as nested mappings of setting names (a table is a mapping of its keys)."""

    flag: Mapping[str, Any]
    environment: Mapping[str, Any]
    file: Mapping[str, Any]

    def source_of(self, *paths: SettingPath) -> Source:
        """The highest layer that gives any of ``paths`` (names of one setting), ``default`` when none does."""
        layers: tuple[tuple[Source, Mapping[str, Any]], ...] = (
            ("flag", self.flag),
            ("environment", self.environment),
            ("file", self.file),
        )
        for source, layer in layers:
            if any(gives(layer, path) for path in paths):
                return source
        return "default"


@dataclass(frozen=True)
class EffectiveSetting:
    path: SettingPath
    value: Any
    source: Source


def gives(layer: Mapping[str, Any], path: SettingPath) -> bool:
    """Whether ``layer`` has a value at ``path``; its top-level names match whatever their case, as in the file."""
    value: Any = {key.lower(): item for key, item in layer.items()}
    for name in path:
        if not isinstance(value, Mapping) or name not in value:
            return False
        value = value[name]
    return True


def effective_settings(
    settings: BaseModel, layers: Layers, twins: Mapping[SettingPath, SettingPath], parent: SettingPath = ()
) -> list[EffectiveSetting]:
    """Every setting of ``settings`` (one in a table by its full path), its value and its source.

    ``twins`` maps a setting to its other name, whose source is its source too.
    """
    entries = []
    for name, field in type(settings).model_fields.items():
        path, value = (*parent, name), getattr(settings, name)
        if table_model(field) is not None:
            entries.extend(effective_settings(value, layers, twins, path))
            continue
        names = (path, twins[path]) if path in twins else (path,)
        entries.append(EffectiveSetting(path, value, layers.source_of(*names)))
    return entries


def broker_settings_text(settings: BrokerSettings, layers: Layers) -> str:
    """The broker's effective settings as TOML, each with its source."""
    return render_toml(effective_settings(settings, layers, BROKER_TWINS))


def render_toml(entries: Iterable[EffectiveSetting]) -> str:
    """The settings as a TOML document: the top-level keys first (TOML needs them before any table)."""
    tables: dict[SettingPath, list[EffectiveSetting]] = {}
    for entry in entries:
        tables.setdefault(entry.path[:-1], []).append(entry)
    lines = [HEADER, *(_line(entry) for entry in tables.pop((), []))]
    for table, rows in tables.items():
        lines.extend(["", f"[{'.'.join(table)}]", *(_line(entry) for entry in rows)])
    return "\n".join(lines) + "\n"


def toml_value(value: Any) -> str:
    """``value`` written as TOML; a type without a TOML form is refused rather than misprinted."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (str, Path)):
        return _toml_string(str(value))
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _line(entry: EffectiveSetting) -> str:
    key = entry.path[-1]
    if entry.value is None:
        return f"# {key} = {UNSET}  # {entry.source}"
    if isinstance(entry.value, SecretStr):
        return f"# {key} = {HIDDEN}  # {entry.source}"
    return f"{key} = {toml_value(entry.value)}  # {entry.source}"


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML also escapes DEL."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
