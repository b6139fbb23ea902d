"""The documentation's fenced code blocks, as the docs test runs them, and what they may import.

The pages are ``README.md`` and every page of ``docs/`` (``DOC_PAGES``, in the order a
reader meets them). A block runs when its language is a shell (``sh``, ``bash``) or
``python``, unless the line just above its opening fence is an HTML comment starting
with ``<!-- not run`` (invisible on a rendered page; it says why, e.g. "it starts the
cluster"). Blocks of any other language (``text`` diagrams, ``toml``) are prose.

Blocks run exactly as written, on the documented ports (``make run``'s 9092-9094 and
19092-19094); the one rewrite is ``.venv/bin/`` to the directory of the interpreter
running the tests, when the suite runs from another environment.

What a page's Python may import is what ``make run`` installs (``MAKE_RUN_EXTRAS``),
plus the extras the page itself tells the reader to add with ``.venv/bin/pip install
-e '.[extra]'``: ``allowed_distributions`` computes that set from ``pyproject.toml`` and
the installed packages' own requirements, so an example that needs a package the
reader does not have fails the suite, not the reader.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC_PAGES = (
    "README.md",
    "docs/http-api.md",
    "docs/python-clients.md",
    "docs/kafka-clients.md",
    "docs/transactions.md",
    "docs/spark.md",
    "docs/cli.md",
    "docs/security.md",
    "docs/operations.md",
    "docs/replication.md",
    "docs/configuration.md",
    "docs/console.md",
    "docs/architecture.md",
    "docs/performance.md",
    "docs/rest-compat.md",
    "docs/testing.md",
)
"""Every page, README first; a page missing here fails ``test_every_page_is_listed``."""
RUN_LANGUAGES = {"sh": "shell", "bash": "shell", "python": "python"}
NOT_RUN_MARKER = "<!-- not run"
MAKE_RUN_EXTRAS = ("fast", "examples")
"""What ``make run`` installs: ``pip install -e '.[fast,examples]'`` (the Makefile says the same)."""
PROJECT = "highwater"
_FENCE = re.compile(r"^```(\S*)\s*$")
TEST_PACKAGE = "tests"
"""The suite's own package: importable from the repository root, by contributors only."""
_PIP_EXTRAS = re.compile(r"\.venv/bin/pip install -e '\.\[([a-z,-]+)\]'")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    """1-based line of the opening fence."""
    language: str
    code: str
    run: bool

    @property
    def kind(self) -> str | None:
        """``shell``, ``python``, or None for a block that is not code to run."""
        return RUN_LANGUAGES.get(self.language)

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"


def page_blocks(page: str, text: str) -> list[Block]:
    """Every fenced block of ``text`` in order; an unclosed fence is an error."""
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if lines[i].startswith("```")), None)
        if end is None:
            raise ValueError(f"{page} line {index + 1}: code block never closed")
        above = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        language = opening.group(1)
        run = language in RUN_LANGUAGES and not above.startswith(NOT_RUN_MARKER)
        blocks.append(Block(page, index + 1, language, "\n".join(lines[index + 1 : end]) + "\n", run))
        index = end + 1
    return blocks


def read_page(page: str) -> list[Block]:
    return page_blocks(page, (REPO_ROOT / page).read_text())


def with_interpreter(code: str, bin_dir: Path) -> str:
    """``code`` with ``.venv/bin/`` pointing at ``bin_dir`` (the environment running the suite)."""
    return code.replace(".venv/bin/", f"{bin_dir}/")


def page_extras(text: str) -> set[str]:
    """The extras a page tells the reader to install (``.venv/bin/pip install -e '.[spark]'``)."""
    return {extra for match in _PIP_EXTRAS.finditer(text) for extra in match.group(1).split(",")}


def imported_modules(code: str) -> set[str]:
    """The top-level modules a Python block imports."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module.split(".")[0])
    return modules


def allowed_distributions(extras: set[str]) -> set[str]:
    """The project and every distribution ``pip install -e '.[extras]'`` brings in, transitively.

    With the ``test`` extra the reader is a contributor working in the repository, so the
    suite's own package (``tests``, never installed) is importable too.
    """
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(text) for text in project["dependencies"]]
    for extra in extras:
        wanted += [Requirement(text) for text in project["optional-dependencies"][extra]]
    allowed = {PROJECT, *({TEST_PACKAGE} if "test" in extras else set())}
    while wanted:
        requirement = wanted.pop()
        name = canonicalize_name(requirement.name)
        if name in allowed:
            continue
        allowed.add(name)
        wanted += _requirements_of(name, requirement.extras)
    return allowed


def _requirements_of(name: str, extras: set[str]) -> list[Requirement]:
    """What an installed distribution requires with ``extras``; markers are evaluated for this interpreter."""
    found = []
    for text in importlib.metadata.requires(name) or []:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": extra}) for extra in extras | {""}):
            found.append(requirement)
    return found


def missing_imports(code: str, allowed: set[str]) -> set[str]:
    """Modules ``code`` imports that neither the standard library nor ``allowed`` distributions provide."""
    missing = set()
    for module in imported_modules(code):
        if module in sys.stdlib_module_names or (module == TEST_PACKAGE and TEST_PACKAGE in allowed):
            continue
        if not _distributions_by_module().get(module, frozenset()) & allowed:
            missing.add(module)
    return missing


@functools.cache
def _distributions_by_module() -> dict[str, frozenset[str]]:
    """Top-level module -> the installed distributions that provide it."""
    return {
        module: frozenset(canonicalize_name(name) for name in names)
        for module, names in importlib.metadata.packages_distributions().items()
    }
