"""Settings tests must not see the developer's own HIGHWATER_* environment."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def clean_highwater_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("HIGHWATER_"):
            monkeypatch.delenv(name)
