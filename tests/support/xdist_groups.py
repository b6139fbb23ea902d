"""A pytest plugin that prints each collected test's xdist group: ``-p tests.support.xdist_groups``.

For checking how ``tests/conftest.py`` splits the suite across workers without running it.
"""

from __future__ import annotations

import pytest

LINE = "XDIST-GROUP"


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        marker = item.get_closest_marker("xdist_group")
        print(LINE, item.nodeid, marker.args[0] if marker else "-")
