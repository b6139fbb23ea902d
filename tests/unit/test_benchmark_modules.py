"""The by-hand benchmarks (``tests/benchmarks``) import: they reuse the tests' steps, so a
renamed step breaks them here, in the suite, not the next time someone measures."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import tests.benchmarks

MODULES = sorted(info.name for info in pkgutil.iter_modules(tests.benchmarks.__path__))


def test_there_are_benchmarks() -> None:
    assert {"broker_start_cpu", "cluster_failover", "group_failover", "replication_failover"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_a_benchmark_imports_and_has_a_main(name: str) -> None:
    module = importlib.import_module(f"tests.benchmarks.{name}")
    assert callable(getattr(module, "main", None)), f"tests.benchmarks.{name} has no main()"
