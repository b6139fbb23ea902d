"""Fixtures shared by the storage tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """A partition directory for ``orders-0`` (not yet created)."""
    return tmp_path / "orders-0"
