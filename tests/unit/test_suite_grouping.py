"""How ``tests/conftest.py`` spreads the suite over workers: one group per shared cluster, so it starts once."""

from __future__ import annotations

import subprocess
import sys

from tests.support.brokers import REPO_ROOT
from tests.support.xdist_groups import LINE

PLUGIN = ["-p", "tests.support.xdist_groups"]
PATHS = ["tests/fuzz", "tests/integration/test_rest_admin.py", "tests/spark/test_tls.py", "tests/unit/test_acks.py"]


def _groups() -> dict[str, str]:
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *PLUGIN, *PATHS],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line.removeprefix(f"{LINE} ").rsplit(" ", 1) for line in collected.splitlines() if line.startswith(LINE)]
    return {node.split("::", 1)[0]: group for node, group in rows}


def test_each_shared_cluster_is_one_group_and_the_rest_spread() -> None:
    groups = _groups()
    fuzz = {group for path, group in groups.items() if path.startswith("tests/fuzz/")}
    assert fuzz == {"tests/fuzz::fuzz_cluster"}, "the fuzz tier's session cluster: every user on one worker"
    assert groups["tests/integration/test_rest_admin.py"] == "tests/integration/test_rest_admin.py"
    assert groups["tests/spark/test_tls.py"] == "spark", "one Spark session per worker"
    assert groups["tests/unit/test_acks.py"] == "-", "a test with nothing shared goes wherever a worker is free"
