"""What a settings field accepts, read off its annotation and constraints.

Two places put a field's type into words: the configuration reference page
(``broker.cli.config_reference``) and a client's refusal of a bad setting
(``broker.client.settings``). Both take the annotation without its ``None`` and the
numeric bounds from here, so the page and the error cannot disagree about what a field
accepts; each keeps its own wording.
"""

from __future__ import annotations

import types
from collections.abc import Iterable
from typing import Any, Union, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt

NUMERIC_BOUNDS: tuple[tuple[type, str, str], ...] = (
    (Ge, "ge", ">="),
    (Gt, "gt", ">"),
    (Le, "le", "<="),
    (Lt, "lt", "<"),
)
"""A numeric constraint's class, the attribute holding its value, and its operator."""


def without_none(annotation: Any) -> tuple[Any, bool]:
    """``(int, True)`` for ``int | None``; ``(annotation, False)`` for anything but an optional of one type."""
    if get_origin(annotation) not in (Union, types.UnionType):
        return annotation, False
    others = [arg for arg in get_args(annotation) if arg is not type(None)]
    if len(others) != 1 or len(others) == len(get_args(annotation)):
        return annotation, False
    return others[0], True


def numeric_bound(constraint: Any) -> tuple[str, Any] | None:
    """``(">=", 0)`` for ``Ge(0)``; None for a constraint that is not a numeric bound."""
    for kind, attribute, operator in NUMERIC_BOUNDS:
        if isinstance(constraint, kind):
            return operator, getattr(constraint, attribute)
    return None


def numeric_bounds(metadata: Iterable[Any]) -> dict[str, Any]:
    """``{">=": 100, "<=": 3600000}``: a field's numeric bounds by operator, in the order declared."""
    return dict(bound for bound in map(numeric_bound, metadata) if bound is not None)
