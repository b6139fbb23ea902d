"""The ``highwater`` command: the CLI's commands (``broker.cli.app``) with ``highwater bench`` mounted.

``highwater bench`` builds on the CLI's own pieces (its option helpers, ``highwater dev``'s
cluster, the throwaway CA), so it sits above the CLI and is mounted here, from above,
rather than by the CLI importing it: imports point one way (``docs/architecture.md``).
"""

from __future__ import annotations

from broker.bench.cli import bench_app
from broker.cli.app import app

app.add_typer(bench_app, name="bench")


def main() -> None:
    """Console-script entry point."""
    app(prog_name="highwater")
