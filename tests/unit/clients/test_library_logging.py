"""The client packages are libraries: no structlog, no print, no logging configuration.

Read from the source (no imports, so the Spark connector is checked without Spark):
an event on a path the integration tests never reach (a retry, a failure) must not
print either, and ``tests/clients/test_library_logging.py`` only sees the paths a
healthy cluster takes.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from broker.client.library_log import LIBRARY_LOGGER, library_logger

REPO_ROOT = Path(__file__).resolve().parents[3]
CLIENT_PACKAGES = ("producer", "consumer", "broker/client", "spark_connector")
CONFIGURING_CALLS = {"basicConfig", "dictConfig", "fileConfig", "addHandler", "setLevel", "configure", "disable"}
CLIENT_SOURCES = sorted(path for package in CLIENT_PACKAGES for path in (REPO_ROOT / package).glob("*.py"))


def _problems(path: Path) -> list[tuple[str, int]]:
    """(what the module does that a library must not, line) for every such place in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(f"import {alias.name}", node.lineno) for alias in node.names if alias.name == "structlog"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "structlog":
            found.append((f"from {node.module} import", node.lineno))
        elif isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id == "print":
                found.append(("print()", node.lineno))
            elif isinstance(function, ast.Attribute) and function.attr in CONFIGURING_CALLS:
                found.append((f".{function.attr}()", node.lineno))
    return found


def test_the_client_sources_are_all_checked() -> None:
    assert len(CLIENT_SOURCES) > 30
    assert REPO_ROOT / "broker/client/library_log.py" in CLIENT_SOURCES


@pytest.mark.parametrize("path", CLIENT_SOURCES, ids=lambda path: str(path.relative_to(REPO_ROOT)))
def test_a_client_module_neither_prints_nor_configures_logging(path: Path) -> None:
    allowed = [".addHandler()"] if path.name == "library_log.py" else []
    problems = _problems(path)
    assert [what for what, _ in problems] == allowed, problems


def test_the_library_adds_only_a_null_handler() -> None:
    handlers = logging.getLogger(LIBRARY_LOGGER).handlers
    assert handlers and all(isinstance(handler, logging.NullHandler) for handler in handlers)


def test_module_loggers_sit_under_one_name() -> None:
    assert library_logger("consumer.fetcher").name == "highwater.consumer.fetcher"
    assert library_logger("consumer.fetcher").parent is logging.getLogger(LIBRARY_LOGGER)
