"""Refuse a setting name that nothing reads, naming the closest name that is read.

A misspelt name is the quietest misconfiguration there is: pydantic-settings reads only
the variables it looks for, so ``HIGHWATER_LOG_RETENTON_MS=1`` is never looked at and a
broker keeps its data for seven days without a word. A key of the TOML file or of a
table in it is refused by the model, but the refusal names only the wrong key. So
before any value is validated, every ``HIGHWATER_*`` variable and every key of the file
is checked against the names the settings model takes, and each unknown one is named
with its likeliest intended name.

The environment is shared with the command-line client and the Python clients, so
their variables (``config.variables``) are allowed and suggested too. Case follows what
pydantic-settings reads: any case for a variable and for a top-level key of the file,
the exact name for a key inside a table.

Pure: the environment and the file arrive as mappings, and the answer is the refusal's
text or ``None``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from config.client import ConsumerSettings, ProducerSettings
from config.variables import CLI_VARIABLES, CLIENT_PREFIXES, PREFIX

NO_SIMILAR_NAME = "no setting has a similar name: docs/configuration.md lists them"


def setting_paths(model: type[BaseModel], parent: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every name ``model`` takes: each field and, in a table (a nested model), each of its keys."""
    paths = []
    for name, field in model.model_fields.items():
        path = (*parent, name)
        paths.append(path)
        table = table_model(field)
        if table is not None:
            paths.extend(setting_paths(table, path))
    return paths


def table_model(field: FieldInfo) -> type[BaseModel] | None:
    """The model of a field that is a table of its own (``[tls]``), ``None`` for a plain value."""
    annotation = field.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def environment_variable(settings: type[BaseSettings], path: tuple[str, ...]) -> str:
    """The variable pydantic-settings reads for ``path``: the prefix, then the names joined by the nested delimiter."""
    config = settings.model_config
    return (config.get("env_prefix", "") + (config.get("env_nested_delimiter") or "").join(path)).upper()


def environment_refusal(environ: Mapping[str, str], settings: type[BaseSettings]) -> str | None:
    """One line naming each ``HIGHWATER_*`` variable no highwater component reads, or ``None``.

    ``settings`` (the broker's) reads its own variables; the CLI's and the clients' are
    allowed because another highwater program sharing the environment reads them.
    """
    own_paths = setting_paths(settings)
    own = {environment_variable(settings, path) for path in own_paths}
    unknown = [name for name in sorted(environ) if _unknown_variable(name, own)]
    if not unknown:
        return None
    delimiter = settings.model_config.get("env_nested_delimiter") or ""
    known = [*own_paths, *(_variable_path(name, delimiter) for name in (*CLI_VARIABLES, *_client_variables()))]
    spelt = partial(environment_variable, settings)
    return "; ".join(
        f"unknown environment variable {name} ({closest_name_hint(_variable_path(name, delimiter), known, spelt)})"
        for name in unknown
    )


def file_refusal(document: Mapping[str, Any], settings: type[BaseModel]) -> str | None:
    """One line naming each key of the settings file that ``settings`` has no setting for, or ``None``."""
    unknown = list(_unknown_keys(document, settings, ()))
    if not unknown:
        return None
    known = setting_paths(settings)
    return "; ".join(
        f"invalid setting {'.'.join(path)}: unknown setting ({closest_name_hint(path, known, '.'.join)})"
        for path in unknown
    )


def closest(path: tuple[str, ...], known: Iterable[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The known path ``path`` most likely meant, or ``None`` when none is similar enough.

    Within a known table only its keys are compared, by the last name alone: the table's
    name they all share would make any two keys look alike (and the table itself is not
    what a key in it meant). A path in no known table is compared whole with every path.
    Case is ignored, as pydantic-settings ignores it for most names.
    """
    parent = tuple(part.lower() for part in path[:-1])
    siblings = {candidate[-1]: candidate for candidate in known if candidate[:-1] == parent}
    if siblings:
        matches = difflib.get_close_matches(path[-1].lower(), siblings, n=1)
        return siblings[matches[0]] if matches else None
    by_text = {".".join(candidate): candidate for candidate in known}
    matches = difflib.get_close_matches(".".join(path).lower(), by_text, n=1)
    return by_text[matches[0]] if matches else None


def closest_name_hint(
    path: tuple[str, ...], known: Iterable[tuple[str, ...]], spelt: Callable[[tuple[str, ...]], str]
) -> str:
    """``did you mean <the closest name, spelt as the operator writes it>?``, or that there is none."""
    match = closest(path, known)
    return f"did you mean {spelt(match)}?" if match else NO_SIMILAR_NAME


def _variable_path(name: str, delimiter: str) -> tuple[str, ...]:
    """``HIGHWATER_TLS__CERT`` -> ``('tls', 'cert')``: the names a variable gives, as the settings model spells them."""
    rest = name.upper().removeprefix(PREFIX).lower()
    return tuple(rest.split(delimiter)) if delimiter else (rest,)


def _unknown_variable(name: str, own: set[str]) -> bool:
    """A ``HIGHWATER_*`` variable that neither ``own`` nor the CLI nor a client reads (cases as each reads them)."""
    upper = name.upper()
    if not upper.startswith(PREFIX):
        return False
    return upper not in own and name not in CLI_VARIABLES and not upper.startswith(CLIENT_PREFIXES)


def _client_variables() -> list[str]:
    return [
        environment_variable(client, (name,))
        for client in (ProducerSettings, ConsumerSettings)
        for name in client.model_fields
    ]


def _unknown_keys(
    table: Mapping[str, Any], model: type[BaseModel], parent: tuple[str, ...]
) -> Iterator[tuple[str, ...]]:
    """The paths of ``table``'s keys that ``model`` has no field for, looking inside the tables it has."""
    fields = model.model_fields
    for key, value in table.items():
        name = key if parent else key.lower()
        if name not in fields:
            yield (*parent, key)
            continue
        inner = table_model(fields[name])
        if inner is not None and isinstance(value, Mapping):
            yield from _unknown_keys(value, inner, (*parent, name))
