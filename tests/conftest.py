"""How the suite is split across parallel workers (``make test`` runs pytest-xdist).

``--dist loadgroup`` hands each ``xdist_group`` whole to one worker and spreads the
other tests one by one. A test that uses a module- or class-scoped fixture (a broker
cluster shared by a module) is grouped with its module, so that cluster starts once,
not once per worker. Every test that starts a Spark JVM (the session-scoped ``spark``
fixture, or the ``spark`` marker: a local-cluster job, the README's Spark example)
forms one group, so one worker runs them one after another: several Spark JVMs at
once on CI's two cores slowed each other until the README's Spark block passed its
120 s limit (two full runs in two at a load average of about 10). Every other test,
the slow parametrized integration tests among them, goes to whichever worker is free.

Hypothesis runs derandomized (the same examples every run, no example database) and
without its per-example deadline, which a loaded CI machine would trip at random:
the suite's verdict depends on the code alone. ``HYPOTHESIS_PROFILE=explore`` draws
new examples when hunting bugs by hand.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("suite", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

SHARED_SCOPES = ("class", "module", "package")
SPARK_GROUP = "spark"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs before xdist's own hook, which reads the groups into the node ids."""
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _group(item: pytest.Item) -> str | None:
    if "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("spark") is not None:
        return SPARK_GROUP
    fixture_info = getattr(item, "_fixtureinfo", None)
    definitions = fixture_info.name2fixturedefs.values() if fixture_info is not None else ()
    if any(definition.scope in SHARED_SCOPES for chain in definitions for definition in chain):
        return item.nodeid.split("::", 1)[0]
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail at once if a pytest/xdist pairing stops grouping (pytest 9.2 did, silently)."""
    grouping = getattr(session.config.option, "loadgroup", False)
    grouped = [item for item in session.items if item.get_closest_marker("xdist_group") is not None]
    if grouping and grouped and "@" not in grouped[0].nodeid:
        raise pytest.UsageError("xdist's --dist loadgroup did not group the tests: check the pytest-xdist pairing")
