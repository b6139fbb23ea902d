"""``docs/rest-compat.md`` is exactly the rendering of the operations table: it cannot drift."""

from __future__ import annotations

from pathlib import Path

from tests.rest_spec.operations import OPERATIONS
from tests.rest_spec.render import render

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "rest-compat.md"


def test_the_committed_note_is_the_rendering_of_the_table() -> None:
    assert DOCUMENT.read_text() == render(), "run: python -m tests.rest_spec.render > docs/rest-compat.md"


def test_the_note_lists_every_operation_once_and_counts_them() -> None:
    text = render()
    for op in OPERATIONS:
        assert text.count(f"`{op.name}`") == 1, op.name
    assert f"Of the spec's {len(OPERATIONS)} operations" in text
