"""Turn settings validation errors into one line an operator can act on.

A broker that starts with a bad setting must stop at once and say which setting is
wrong and why, in a single line (``highwater: invalid setting log_segment_bytes:
must be >= 1024 (got 10)``), rather than a multi-line pydantic report or, worse,
fail later with a confusing symptom.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

PROGRAM = "highwater"
_NUMBER = re.compile(r"-?\d+(\.\d+)?")

_BOUND_WORDS = {
    "greater_than_equal": ("ge", ">="),
    "greater_than": ("gt", ">"),
    "less_than_equal": ("le", "<="),
    "less_than": ("lt", "<"),
}


class SettingsRefused(ValueError):
    """Settings refused before any value is validated; the message is the operator's line without the program name."""


class ConfigFileError(SettingsRefused):
    """The ``--config`` file is missing, unreadable or not valid TOML; the message is one line."""


class UnknownSettingName(SettingsRefused):
    """A ``HIGHWATER_*`` variable or a key of the file that nothing reads (``config.unknown_names``)."""


def _shown(value: Any) -> str:
    """Numbers unquoted whether they came from TOML or as environment text; other text quoted."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)) or (isinstance(value, str) and _NUMBER.fullmatch(value.strip())):
        return str(value).strip()
    return repr(value)


def setting_name(loc: tuple[int | str, ...]) -> str:
    """``('topic_defaults', 'retention_ms')`` -> ``topic_defaults.retention_ms``."""
    return ".".join(str(part) for part in loc)


def describe_problem(error: ErrorDetails) -> str:
    """What is wrong with one value, phrased for an operator (no pydantic jargon)."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    got = f" (got {_shown(error['input'])})"
    if kind in _BOUND_WORDS:
        key, word = _BOUND_WORDS[kind]
        return f"must be {word} {ctx[key]}{got}"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}{got}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"must be an integer{got}"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false{got}"
    if kind == "extra_forbidden":
        return "unknown setting"
    if kind == "missing":
        return "is required"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"])) + got
    message = error["msg"]
    return message[:1].lower() + message[1:] + got


def format_settings_error(error: ValidationError) -> str:
    """One line naming every invalid setting and its problem, prefixed with the program name."""
    parts = []
    for detail in error.errors():
        if detail["loc"]:
            parts.append(f"invalid setting {setting_name(detail['loc'])}: {describe_problem(detail)}")
        else:
            parts.append(f"invalid settings: {detail.get('ctx', {}).get('error', detail['msg'])}")
    return f"{PROGRAM}: " + "; ".join(parts)
