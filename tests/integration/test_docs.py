"""The README and every page of ``docs/``, run as written against ``highwater dev`` on the documented ports.

A newcomer types ``make run`` and then the pages' examples in a second terminal, on
127.0.0.1:9092-9094 (HTTP) and 19092-19094 (Kafka). The suite does the same: it starts
``highwater dev`` exactly as ``make run`` does, on those ports, and runs every shell
and Python block (``tests.support.doc_blocks``) from the repository root: shell blocks
in ``bash`` (with ``-euo pipefail``, so a failing command or an unset variable fails the
block), Python blocks with the interpreter of ``.venv``. Each must exit 0, print
something, print no Python traceback and no REST error body (``curl -s`` exits 0 on a
404, so an ``"error_code"`` other than 200 in its output is how a wrong name shows).
Blocks run in page order because later ones use what earlier ones made, as a reader's
do; each page needs only what ``make run`` made, so the pages run in any order.

The README runs on the first start. Then the cluster is stopped as Ctrl-C stops it and
started again at once, as a reader's second ``make run``: its Kafka bootstrap must still
be the documented ports (a quick restart once moved them), and the other pages run on
that second start.

The ports are fixed, and no other test listens there (the harness's ports start at
20000, above them), so one worker at a time may run this module: the pages whose
examples start Spark run in the Spark phase (the README on the first start, then
``docs/spark.md``), the others in the first phase, on a ``highwater dev`` of their own
(started, stopped, restarted at once). Both refuse to start when something already
listens there (a ``make run`` left up). The environment is the reader's: no
``PYSPARK_*`` variables the Spark tests may have set, no ``HIGHWATER_*`` ones; the one addition is ``JAVA_TOOL_OPTIONS``, the cheap
GC and JIT the Spark tier uses, which changes the Spark examples' speed, not their
results. Each block's ``TMPDIR`` is the test's own directory, so what an example makes
with ``tempfile`` (``docs/spark.md``'s output and checkpoint) goes with the test's, not
into the machine's ``/tmp``. A ``make`` command is never run here: a block with one must
carry the not-run comment.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.dev_cluster import interrupt_dev, read_until_ready, start_dev
from tests.support.doc_blocks import DOC_PAGES, REPO_ROOT, Block, imported_modules, read_page, with_interpreter

pytestmark = pytest.mark.integration

HTTP_BASE_PORT = 9092
KAFKA_BASE_PORT = 19092
BROKERS = 3
DOCUMENTED_BOOTSTRAP = "bootstrap.servers=127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094"
BLOCK_TIMEOUT_S = 120
JAVA_OPTIONS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
MAKE_COMMAND = re.compile(r"^\s*make\b", re.MULTILINE)
REST_ERROR = re.compile(r'"error_code":\s*(?!200\b)\d+')
"""A REST Proxy error body; a produce result carries ``"error_code": 200``."""
EXPECTED_OUTPUT = {
    "README.md": {
        "cluster id": '"data": "user-1"',
        "send_and_wait": "b'hello'",
        "demo-readers": "demo ",
        'format("highwater")': "Row(partition=0,",
    },
    "docs/python-clients.md": {
        'group_id="billing"': "read 6 records",
        'group_id="audit"': "processed",
    },
    "docs/http-api.md": {"groups describe demo-group": "group demo-group: status"},
    "docs/kafka-clients.md": {"kcat -L": "3 brokers", "kafka-readers": "offset 0:"},
    "docs/spark.md": {'format("highwater")': "{'demo': {"},
    "docs/cli.md": {"consume clicks": "hello"},
}
"""Page -> a piece of a block's code -> a piece of what that block must print."""


def starts_spark(page: str) -> bool:
    """Whether an example of ``page`` imports pyspark: it then runs in the Spark phase (``tests/conftest.py``)."""
    return any(b.kind == "python" and "pyspark" in imported_modules(b.code) for b in read_page(page) if b.run)


RUN_PAGES = [
    pytest.param(page, marks=pytest.mark.spark) if starts_spark(page) else page
    for page in DOC_PAGES
    if page != "README.md" and any(b.run for b in read_page(page))
]


def reader_env() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith(("PYSPARK_", "HIGHWATER_"))}
    env["JAVA_TOOL_OPTIONS"] = JAVA_OPTIONS
    return env


def documented_ports_are_free() -> None:
    """Fail with the reason when a documented port is taken: the examples could not run as written."""
    for port in [HTTP_BASE_PORT + i for i in range(BROKERS)] + [KAFKA_BASE_PORT + i for i in range(BROKERS)]:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError as error:
                if error.errno != errno.EADDRINUSE:
                    raise
                pytest.fail(f"127.0.0.1:{port} is taken (a `make run` cluster?): the docs test needs it")


class DevRun:
    """``highwater dev`` as ``make run`` starts it, in a directory of the test's own."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.process: subprocess.Popen | None = None
        self.printed = ""

    def start(self) -> str:
        self.process = start_dev(self.directory, HTTP_BASE_PORT, BROKERS, kafka_base_port=KAFKA_BASE_PORT)
        self.printed = read_until_ready(self.process)
        return self.printed

    def stop(self) -> None:
        """Ctrl-C: SIGINT to dev and its brokers at once, as a terminal sends it."""
        assert self.process is not None
        code, _, stderr = interrupt_dev(self.process)
        assert (code, stderr) == (0, ""), stderr


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevRun]:
    documented_ports_are_free()
    run = DevRun(tmp_path_factory.mktemp("docs") / ".highwater-dev")
    assert DOCUMENTED_BOOTSTRAP in run.start()
    try:
        yield run
    finally:
        run.stop()


@pytest.fixture(scope="module")
def restarted(dev_run: DevRun) -> DevRun:
    """The cluster after Ctrl-C and an immediate second ``make run``, after the README used its Kafka ports."""
    dev_run.stop()
    printed = dev_run.start()
    assert DOCUMENTED_BOOTSTRAP in printed, f"the Kafka ports moved on a quick restart:\n{printed}"
    return dev_run


def run_block(block: Block, code: str, scratch: Path) -> subprocess.CompletedProcess[str]:
    if block.kind == "shell":
        command = ["bash", "-euo", "pipefail", "-c", code]
    else:
        script = scratch / f"{Path(block.page).stem}_line_{block.line}.py"
        script.write_text(code)
        command = [sys.executable, str(script)]
    return subprocess.run(
        command,
        cwd=REPO_ROOT,
        env={**reader_env(), "TMPDIR": str(scratch)},
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
        check=False,
    )


def run_page(page: str, scratch: Path) -> None:
    expected = EXPECTED_OUTPUT.get(page, {})
    checked = set()
    bin_dir = Path(sys.executable).parent
    for block in (block for block in read_page(page) if block.run):
        assert not MAKE_COMMAND.search(block.code), f"{block.where}: a make command; mark the block not run"
        started = time.monotonic()
        result = run_block(block, with_interpreter(block.code, bin_dir), scratch)
        print(f"{block.where} ({block.language}): exit {result.returncode} in {time.monotonic() - started:.1f} s")
        where = f"{block.where} ({block.language}):\n{block.code}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        assert result.returncode == 0, where
        assert "Traceback" not in result.stderr, where
        assert REST_ERROR.search(result.stdout) is None, where
        assert result.stdout.strip(), f"printed nothing: {where}"
        for piece, output in expected.items():
            if piece in block.code:
                assert output in result.stdout, f"expected {output!r} in the output of {where}"
                checked.add(piece)
    assert checked == expected.keys(), f"a checked example left {page}; update EXPECTED_OUTPUT"


@pytest.mark.spark
def test_every_readme_block_runs_on_a_fresh_make_run(dev_run: DevRun, tmp_path: Path) -> None:
    assert starts_spark("README.md"), "the README no longer starts Spark: let it run in the first phase"
    run_page("README.md", tmp_path)


@pytest.mark.parametrize("page", RUN_PAGES)
def test_every_block_of_a_docs_page_runs_after_a_quick_restart(page: str, restarted: DevRun, tmp_path: Path) -> None:
    run_page(page, tmp_path)
