"""How the suite is split across parallel workers (``make test`` runs pytest-xdist).

Every test is put in an ``xdist_group`` so that ``--dist loadgroup`` hands whole groups
to a worker: a module's tests stay together, so a module-scoped broker cluster is
started once, not once per worker; the Spark tests form one group, so one worker
starts the one session-scoped Spark JVM and the brokers it reads from.

Hypothesis runs derandomized (the same examples every run, no example database) and
without its per-example deadline, which a loaded CI machine would trip at random:
the suite's verdict depends on the code alone. ``HYPOTHESIS_PROFILE=explore`` draws
new examples when hunting bugs by hand.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("suite", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

SPARK_TESTS = Path(__file__).with_name("spark")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs before xdist's own hook, which reads the groups into the node ids."""
    for item in items:
        group = "spark" if SPARK_TESTS in item.path.parents else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail at once if a pytest/xdist pairing stops grouping (pytest 9.2 did, silently)."""
    grouping = getattr(session.config.option, "loadgroup", False)
    if grouping and session.items and "@" not in session.items[0].nodeid:
        raise pytest.UsageError("xdist's --dist loadgroup did not group the tests: check the pytest-xdist pairing")
