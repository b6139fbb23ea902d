"""A client's settings from its keyword arguments, or one ``ClientConfigError`` line the caller can act on.

``Producer`` and ``Consumer`` (and so their sync facades) build ``config.client``'s
``ProducerSettings``/``ConsumerSettings`` from the servers and keyword arguments they
were given. pydantic refuses a bad value with a multi-line report about a model the
caller never named, ending in a link to pydantic's site; the caller wrote ``acks=2``.
So a refused setting is reported the way it was written:

    acks=2 is not valid: use 0, 1 or "all"
    linger_ms=-1 is not valid: use an integer >= 0
    lingr_ms is not a producer setting: did you mean linger_ms?
    HIGHWATER_CONSUMER_FETCH_MAX_WAIT_MS='soon' is not valid: use an integer >= 0
    consumer settings are not valid: heartbeat_interval_ms must be less than session_timeout_ms

What is allowed is read from the settings model (its annotation and bounds), so the
message follows the model when a rule changes. ``config.errors.format_settings_error``
is the broker's operator line (``highwater: invalid setting ...``) built from pydantic's
coerced input; a client names the keyword or environment variable the value came from
and suggests the setting a typo meant.

Invariant: no secret reaches a message. The value of a ``SecretStr`` setting is never
shown, nor the value of a keyword that is no setting at all (it may be a misspelt
``password``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

from annotated_types import MinLen
from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings

from broker.client.errors import ClientConfigError
from config.field_shape import numeric_bounds, without_none

Settings = TypeVar("Settings", bound=BaseSettings)

SERVERS_FIELD = "bootstrap_servers"
"""Filled from the clients' first argument, ``servers``, and named so in messages."""
_NUMBER = re.compile(r"-?\d+")


def build_settings(model: type[Settings], kind: str, servers: object, given: Mapping[str, Any]) -> Settings:
    """``model`` from ``servers`` and the keyword arguments ``given``; ``ClientConfigError`` if refused.

    ``kind`` (``producer``, ``consumer``) names the client in messages. The pydantic error
    is not chained: its report (and link) is what the caller should not have to read.
    """
    if SERVERS_FIELD in given:
        raise ClientConfigError(
            f"{SERVERS_FIELD} is not a {kind} setting: give the broker URLs as servers, the first argument",
            (SERVERS_FIELD,),
        )
    values: dict[str, Any] = {**given, SERVERS_FIELD: servers_text(servers)}
    try:
        return model(**values)
    except ValidationError as error:
        message, names = describe_refusal(error, model, kind, given)
    raise ClientConfigError(message, names)


def servers_text(servers: object) -> str:
    """The comma-separated text of ``servers``: one URL string, several in one string, or a list of them."""
    if isinstance(servers, str):
        return servers
    if isinstance(servers, Sequence) and all(isinstance(url, str) for url in servers):
        return ",".join(servers)
    raise ClientConfigError(
        f'servers={servers!r} is not valid: use a broker URL ("http://127.0.0.1:9092"), '
        "several separated by commas, or a list of URLs",
        ("servers",),
    )


def describe_refusal(
    error: ValidationError, model: type[BaseSettings], kind: str, given: Mapping[str, Any]
) -> tuple[str, tuple[str, ...]]:
    """One line for every refused setting (pydantic may report a setting twice: once is enough), and their names."""
    lines: dict[str, str] = {}
    for detail in error.errors():
        name = str(detail["loc"][0]) if detail["loc"] else ""
        if name not in lines:
            lines[name] = _problem(detail, name, model, kind, given)
    names = tuple("servers" if name == SERVERS_FIELD else name for name in lines if name)
    return "; ".join(lines.values()), names


def _problem(detail: ErrorDetails, name: str, model: type[BaseSettings], kind: str, given: Mapping[str, Any]) -> str:
    if not name:
        return f"{kind} settings are not valid: {_rule_text(detail)}"
    if detail["type"] == "extra_forbidden":
        return _unknown_setting(name, model, kind)
    field = model.model_fields[name]
    allowed = _rule_text(detail) if detail["type"] == "value_error" else "use " + allowed_values(field)
    return f"{_as_given(name, field, model, given, detail)} is not valid: {allowed}"


def _rule_text(detail: ErrorDetails) -> str:
    """The text a validator raised (``ValueError("...")``), without pydantic's ``Value error,`` prefix."""
    return str((detail.get("ctx") or {}).get("error", detail["msg"]))


def _unknown_setting(name: str, model: type[BaseSettings], kind: str) -> str:
    known = sorted(field for field in model.model_fields if field != SERVERS_FIELD)
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f"{name} is not a {kind} setting: did you mean {close[0]}?"
    return f"{name} is not a {kind} setting; the settings are {', '.join(known)}"


def _as_given(
    name: str, field: FieldInfo, model: type[BaseSettings], given: Mapping[str, Any], detail: ErrorDetails
) -> str:
    """``acks=2`` as the keyword was written, or the environment variable the value came from."""
    if name == SERVERS_FIELD:
        return f"servers={detail['input']!r}"
    shown = name if name in given else f"{model.model_config.get('env_prefix', '')}{name}".upper()
    if without_none(field.annotation)[0] is SecretStr:
        return f"{shown} (value not shown)"
    value = given[name] if name in given else detail["input"]
    return f"{shown}={value!r}"


def allowed_values(field: FieldInfo) -> str:
    """What a setting takes, in a caller's words: ``0, 1 or "all"``, ``an integer >= 0``, ``a string or None``."""
    base, optional = without_none(field.annotation)
    if get_origin(base) is Literal:
        text = _choices(get_args(base))
    elif base is bool:
        text = "True or False"
    elif base is int:
        text = "an integer" + _bounds(field.metadata)
    elif base is Path:
        text = "a file path"
    elif base in (str, SecretStr):
        text = (
            "a non-empty string"
            if any(isinstance(m, MinLen) and m.min_length > 0 for m in field.metadata)
            else "a string"
        )
    else:
        text = f"a {getattr(base, '__name__', base)}"
    return text + (" or None" if optional else "")


def _choices(values: tuple[Any, ...]) -> str:
    """``0, 1 or "all"``: numbers as a caller may type them, other text quoted."""
    shown = [str(value) if _NUMBER.fullmatch(str(value)) else f'"{value}"' for value in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _bounds(metadata: list[Any]) -> str:
    """`` >= 0``, `` from 100 to 3600000``: the field's numeric bounds, or nothing without any."""
    bounds = numeric_bounds(metadata)
    if bounds.keys() == {">=", "<="}:
        return f" from {bounds['>=']} to {bounds['<=']}"
    return "".join(f" {word} {value}" for word, value in bounds.items())
