"""The house's rules, read from the code's own imports (``ast``, nothing is imported to check).

1. ``broker.replication`` and ``broker.security`` are pure: none of their modules
   reaches — directly or through any project module it imports — the event loop, the
   network, files, threads or the clock, nor a driver (``broker.replica_io``, the
   server, the node). That is what lets the seeded simulation run the broker's own
   replication decisions, and every door ask the same authorization questions.
2. No import cycles anywhere in the project: every import, including those inside
   functions and under ``TYPE_CHECKING``, points one way.
3. Imports point down ``docs/architecture.md``'s layer table (or across a row), which is
   read from the page itself, so the map and the house cannot drift apart: every module
   is in a row, and no import reaches a row above its own.
4. ``BrokerNode`` only wires, starts and stops: its public methods are ``start`` and ``stop``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("broker", "producer", "consumer", "spark_connector", "config")

PURE_PACKAGES = ("broker.replication", "broker.security")
IMPURE_STDLIB = frozenset(
    {
        "asyncio",
        "aiohttp",
        "concurrent",
        "fcntl",
        "io",
        "mmap",
        "os",
        "pathlib",
        "shutil",
        "socket",
        "sqlite3",
        "subprocess",
        "tempfile",
        "threading",
        "time",
        "aetcd",
    }
)
DRIVERS = ("broker.replica_io", "broker.server", "broker.node", "broker.cluster.controller", "broker.storage.log")


def _module_files() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


MODULES = _module_files()


def _imported_names(path: Path) -> Iterator[str]:
    """Every module name an import statement in ``path`` names, resolved to absolute names."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    own = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = own.split(".")[: len(own.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _project_edges(name: str) -> set[str]:
    """The project modules ``name`` imports (``from p import m`` names module ``p.m`` when it exists)."""
    targets = set()
    for imported in _imported_names(MODULES[name]):
        if imported in MODULES and imported != name:
            targets.add(imported)
    return targets


def _reachable(start: str) -> dict[str, list[str]]:
    """Every project module reachable from ``start`` (package ``__init__`` files included,
    as Python runs them), with one import path to it."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        current = todo.pop()
        parents = {".".join(current.split(".")[:i]) for i in range(1, current.count(".") + 1)}
        for target in _project_edges(current) | (parents & MODULES.keys()):
            if target not in paths:
                paths[target] = [*paths[current], target]
                todo.append(target)
    return paths


def _stdlib_imports(name: str) -> set[str]:
    return {imported.split(".")[0] for imported in _imported_names(MODULES[name])} & IMPURE_STDLIB


def test_the_replication_core_reaches_no_io_no_clock_and_no_driver():
    pure = [name for name in MODULES if name.startswith(PURE_PACKAGES)]
    assert "broker.replication.replica" in pure
    problems = []
    for name in pure:
        for reached, path in _reachable(name).items():
            if reached.startswith(DRIVERS):
                problems.append(f"{' -> '.join(path)}: a driver")
            for impure in sorted(_stdlib_imports(reached)):
                problems.append(f"{' -> '.join(path)}: imports {impure}")
    assert not problems, "\n".join(sorted(set(problems)))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return components


def test_no_import_cycles_in_the_project():
    assert not _cycles({name: _project_edges(name) for name in MODULES})


def test_the_cycle_finder_reports_a_loop_and_only_the_loop():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]


ARCHITECTURE_PAGE = ROOT / "docs" / "architecture.md"


def _layer_rows(page: str) -> list[tuple[str, list[str]]]:
    """``(layer, [path, ...])`` for each row of the page's layer table, bottom row first."""
    section = page.split("## Layers, from the ground up", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] not in ("layer", "---"):
            rows.append((cells[0].strip("*"), re.findall(r"`([^`]+)`", cells[1])))
    return rows


def _row_of(path: str, rows: list[tuple[str, list[str]]]) -> int | None:
    """The row whose longest listed path contains ``path`` (``broker/errors/`` holds ``broker/errors/groups.py``)."""
    best: tuple[int, int] | None = None
    for number, (_, paths) in enumerate(rows):
        for listed in paths:
            if (path == listed or (listed.endswith("/") and path.startswith(listed))) and (
                best is None or len(listed) > best[1]
            ):
                best = (number, len(listed))
    return None if best is None else best[0]


def _layer_violations(rows: list[tuple[str, list[str]]], modules: dict[str, Path]) -> list[str]:
    where = {name: _row_of(path.relative_to(ROOT).as_posix(), rows) for name, path in modules.items()}
    problems = [
        f"{name} ({modules[name].relative_to(ROOT)}) is in no row" for name, row in where.items() if row is None
    ]
    for name, row in where.items():
        if row is None:
            continue
        for target in _project_edges(name):
            target_row = where.get(target)
            if target_row is not None and target_row > row:
                problems.append(f"{name} ({rows[row][0]}) imports {target} ({rows[target_row][0]}): a row above")
    return sorted(problems)


def test_the_layer_table_has_the_rows_the_page_describes():
    rows = _layer_rows(ARCHITECTURE_PAGE.read_text())
    names = [name for name, _ in rows]
    assert names[0] == "leaves" and names.index("the core") < names.index("drivers") < names.index("the broker")
    assert ("broker/replication/", "the core") in {(path, name) for name, paths in rows for path in paths}


def test_every_import_points_down_the_layer_table():
    assert not _layer_violations(_layer_rows(ARCHITECTURE_PAGE.read_text()), MODULES)


def test_an_import_up_the_table_and_a_module_in_no_row_are_reported():
    rows = [("leaves", ["broker/errors/"]), ("groups", ["broker/groups/"])]
    modules = {
        "broker.errors": ROOT / "broker/errors/__init__.py",
        "broker.errors.groups": ROOT / "broker/errors/groups.py",
        "broker.groups.coordinator": ROOT / "broker/groups/coordinator.py",
        "broker.node.broker_node": ROOT / "broker/node/broker_node.py",
    }
    problems = _layer_violations(rows, modules)
    assert "broker.node.broker_node (broker/node/broker_node.py) is in no row" in problems
    assert not any(problem.startswith("broker.groups.coordinator") for problem in problems)
    upside_down = [("leaves", ["broker/groups/"]), ("groups", ["broker/errors/"])]
    assert any(
        problem.startswith("broker.groups.coordinator (leaves) imports broker.errors")
        for problem in _layer_violations(upside_down, modules)
    )


def _public_methods(path: Path, class_name: str) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    [cls] = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == class_name]
    methods = (node for node in cls.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef))
    return sorted(method.name for method in methods if not method.name.startswith("_"))


def test_the_broker_node_only_wires_starts_and_stops():
    """Every door asks the node's pieces through its own protocol; a request method on the node would be a
    pass-through a door could lean on instead (``HttpHost``, ``KafkaNode``, ``GroupHost``). Its lifecycle is
    ``start``, ``hand_over`` (the first half of a stop, while the doors are open) and ``stop``."""
    assert _public_methods(MODULES["broker.node.broker_node"], "BrokerNode") == ["hand_over", "start", "stop"]
