"""README.md, run as written: every shell and Python block, in order, against a live
``highwater dev`` cluster (what ``make run`` starts), so the README cannot drift.

The blocks run as a reader runs them from the repository root in a second terminal:
shell blocks in ``bash`` (with ``-euo pipefail``, so a failing command or an unset
variable fails the block), Python blocks with the interpreter of ``.venv``. Each must
exit 0, print no Python traceback and no REST error body (``curl -s`` exits 0 on a
404, so an ``"error_code"`` other than 200 in its output is how a wrong name shows). Blocks run in
README order because later ones use what earlier ones made (the ``orders`` topic,
the ``billing`` group), as a reader's do. Which blocks are not run, and how the
addresses are rewritten: ``tests.support.readme_blocks``.

Where cheap, a block's output is also checked (``EXPECTED_OUTPUT``). The environment
is the reader's: no ``PYSPARK_*`` variables the Spark tests may have set in this
process, and ``HIGHWATER_SERVER`` pointing at the test cluster, which is what the CLI's
default ``http://127.0.0.1:9092`` is for a ``make run`` cluster. The one addition is
``JAVA_TOOL_OPTIONS``: the Spark example's JVM starts with the cheap GC and JIT the
Spark tier uses (``tests/spark/conftest.py``), which changes its speed, not its results.
A ``make`` command is never run here (``make run`` would start a second cluster on the
reader's ports): a block with one must carry the not-run comment.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.brokers import REPO_ROOT, free_port_run
from tests.support.dev_cluster import read_until_ready, start_dev, stop_dev
from tests.support.readme_blocks import MAKE_RUN_BASE_PORT, Block, for_cluster, readme_blocks

pytestmark = [pytest.mark.integration, pytest.mark.spark]

README = REPO_ROOT / "README.md"
BLOCK_TIMEOUT_S = 120
JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
MAKE_COMMAND = re.compile(r"^\s*make\b", re.MULTILINE)
REST_ERROR = re.compile(r'"error_code":\s*(?!200\b)\d+')
"""A REST Proxy error body; a produce result carries ``"error_code": 200``."""
EXPECTED_OUTPUT = {
    "send_and_wait": "b'hello'",
    'group_id="billing"': "b'b'",
    'group_id="audit"': "processed",
    "groups describe billing": "group billing: status",
    'format("highwater")': "{'orders': {",
    "consume clicks": "hello",
}
"""A piece of a block's code -> a piece of what that block must print."""


@pytest.fixture(scope="module")
def dev_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A running ``highwater dev`` cluster of three brokers; its base port."""
    base_port = free_port_run(3)
    process = start_dev(tmp_path_factory.mktemp("readme") / "dev", base_port)
    try:
        read_until_ready(process)
        yield base_port
    finally:
        assert stop_dev(process) == 0


def reader_env(base_port: int) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYSPARK_")}
    env["HIGHWATER_SERVER"] = f"http://127.0.0.1:{base_port}"
    env["JAVA_TOOL_OPTIONS"] = JAVA_OPTIONS
    return env


def run_block(block: Block, code: str, env: dict[str, str], scratch: Path) -> subprocess.CompletedProcess[str]:
    if block.kind == "shell":
        command = ["bash", "-euo", "pipefail", "-c", code]
    else:
        script = scratch / f"readme_line_{block.line}.py"
        script.write_text(code)
        command = [sys.executable, str(script)]
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S, check=False
    )


def test_every_readme_block_runs_against_a_live_cluster(dev_cluster: int, tmp_path: Path) -> None:
    blocks = [block for block in readme_blocks(README.read_text()) if block.run]
    env = reader_env(dev_cluster)
    bin_dir = Path(sys.executable).parent
    checked = set()
    for block in blocks:
        code = for_cluster(block.code, dev_cluster, bin_dir)
        assert str(MAKE_RUN_BASE_PORT) not in code, f"README line {block.line}: an address was not rewritten"
        assert not MAKE_COMMAND.search(code), f"README line {block.line}: a make command; mark the block not run"
        started = time.monotonic()
        result = run_block(block, code, env, tmp_path)
        print(
            f"README line {block.line} ({block.language}): exit {result.returncode} "
            f"in {time.monotonic() - started:.1f} s"
        )
        where = (
            f"README line {block.line} ({block.language}):\n{block.code}\nstdout:\n{result.stdout}\n"
            f"stderr:\n{result.stderr}"
        )
        assert result.returncode == 0, where
        assert "Traceback" not in result.stderr, where
        assert REST_ERROR.search(result.stdout) is None, where
        assert result.stdout.strip(), f"printed nothing: {where}"
        for piece, output in EXPECTED_OUTPUT.items():
            if piece in block.code:
                assert output in result.stdout, f"expected {output!r} in the output of {where}"
                checked.add(piece)
    assert checked == EXPECTED_OUTPUT.keys(), "a checked example left the README; update EXPECTED_OUTPUT"


def test_only_blocks_marked_in_the_readme_are_left_out() -> None:
    """``make run``/``make test``, long-running servers and benchmarks are the only code not run."""
    blocks = readme_blocks(README.read_text())
    not_run = [block for block in blocks if block.kind is not None and not block.run]
    assert README.read_text().startswith("# highwater\n")
    assert "make run" in not_run[0].code and "make test" in not_run[0].code and not_run[0].line < 10
    assert {block.kind for block in blocks if block.run} == {"shell", "python"}
    assert all(block.kind is None for block in blocks if block.language not in ("sh", "bash", "python"))
