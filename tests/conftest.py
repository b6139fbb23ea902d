"""How the suite is split across parallel workers (``make test`` runs pytest-xdist).

``--dist loadgroup`` hands each ``xdist_group`` whole to one worker and spreads the
other tests one by one. A test that uses a module- or class-scoped fixture (a broker
cluster shared by a module) is grouped with its module, so that cluster starts once,
not once per worker; the tests that use one session-scoped cluster (the fuzz tier's),
or one package-scoped fixture (the host tier's hosts), are grouped together for the
same reason.

Every test that starts a Spark JVM (the session-scoped ``spark`` fixture, or the
``spark`` marker: a local-cluster job, the docs pages whose examples start Spark) carries
the ``spark`` marker, and ``make test`` runs them in a phase of their own, after the rest.
Spark gives a Python worker a fixed 10 s to start and connect back to the JVM
(``PythonWorkerFactory``), which no setting changes; sharing CI's two cores with three
workers of broker failovers, fuzzing and chaos, the worker missed it ("Python worker
failed to connect back") and the README's Spark block passed its 120 s limit. The
Spark phase runs on two workers: the tests of the ``spark`` session form one group (one
JVM, on one worker), the docs test's Spark pages another (their examples start one JVM
at a time), and the local-cluster job goes to whichever is free; no worker ever runs
two JVMs at once, and nothing else competes with them.

Hypothesis runs derandomized (the same examples every run, no example database) and
without its per-example deadline, which a loaded CI machine would trip at random:
the suite's verdict depends on the code alone. ``HYPOTHESIS_PROFILE=explore`` draws
new examples when hunting bugs by hand.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
import structlog
from hypothesis import settings

from tests.support.cluster import clusters, is_cluster_fixture

__all__ = ["clusters", "prefix"]

settings.register_profile("suite", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "suite"))

SHARED_SCOPES = ("class", "module", "package")
SPARK_GROUP = "spark"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs before xdist's hook, which reads the groups into the node ids, and before ``-m`` selects by marker."""
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _group(item: pytest.Item) -> str | None:
    if "spark" in getattr(item, "fixturenames", ()):
        return SPARK_GROUP
    fixture_info = getattr(item, "_fixtureinfo", None)
    definitions = [d for chain in fixture_info.name2fixturedefs.values() for d in chain] if fixture_info else []
    for definition in definitions:
        if definition.scope == "session" and is_cluster_fixture(definition.func):
            return f"{definition.baseid}::{definition.argname}"
        if definition.scope == "package":
            return f"{definition.baseid}::{definition.argname}"
    if any(definition.scope in SHARED_SCOPES for definition in definitions):
        return item.nodeid.split("::", 1)[0]
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail at once if a pytest/xdist pairing stops grouping (pytest 9.2 did, silently)."""
    grouping = getattr(session.config.option, "loadgroup", False)
    grouped = [item for item in session.items if item.get_closest_marker("xdist_group") is not None]
    if grouping and grouped and "@" not in grouped[0].nodeid:
        raise pytest.UsageError("xdist's --dist loadgroup did not group the tests: check the pytest-xdist pairing")


@pytest.fixture(autouse=True)
def structlog_as_it_was() -> Iterator[None]:
    """Every test starts with the structlog configuration the one before it started with. A command
    run in-process (``highwater bench …`` through typer's runner) configures structlog as its
    process's owner; left in place, its WARNING filter silently dropped the info events a later test
    on that worker captured. The stdlib root logger is left alone: its handlers include pytest's
    own capture handler of the phase under way, which must not outlive that phase."""
    saved = structlog.get_config()
    saved["processors"] = list(saved["processors"])
    yield
    structlog.configure(**saved)


@pytest.fixture
def prefix(request: pytest.FixtureRequest) -> str:
    """The test's name, made a name part: the prefix of the topics, groups and ACLs a test
    makes on a cluster its module shares, so no two tests meet in one name."""
    return re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name.removeprefix("test_"))
