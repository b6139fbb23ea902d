"""A field's annotation without ``None`` and its numeric bounds, as the reference page and the clients read them."""

from __future__ import annotations

from typing import Literal

from annotated_types import Ge, Le, MinLen

from config.field_shape import numeric_bounds, without_none


def test_only_an_optional_of_one_type_loses_its_none() -> None:
    assert without_none(int | None) == (int, True)
    assert without_none(int) == (int, False)
    assert without_none(int | str) == (int | str, False)
    assert without_none(Literal["a", "b"] | None) == (Literal["a", "b"], True)


def test_numeric_bounds_keep_their_order_and_skip_other_constraints() -> None:
    assert numeric_bounds([Ge(100), MinLen(1), Le(3_600_000)]) == {">=": 100, "<=": 3_600_000}
    assert list(numeric_bounds([Le(5), Ge(1)])) == ["<=", ">="]
    assert numeric_bounds([MinLen(1)]) == {}
