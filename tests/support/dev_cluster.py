"""``highwater dev`` (what ``make run`` starts) as a subprocess of a test.

The command is run as ``make run`` runs it, only on the ports ``free_port_run`` hands
out and in a directory of the test's own, so tests never meet a cluster a developer
left running on 9092.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.brokers import REPO_ROOT

READY_LINE = "Press Ctrl-C to stop the cluster."


def start_dev(directory: Path, base_port: int, brokers: int = 3, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.cli",
            "dev",
            "--brokers",
            str(brokers),
            "--dir",
            str(directory),
            "--base-port",
            str(base_port),
            *extra,
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until_ready(process: subprocess.Popen, timeout_s: float = 90.0) -> str:
    """Everything ``dev`` printed up to its ready line (the demo ran, examples printed)."""
    deadline = time.monotonic() + timeout_s
    lines = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"dev exited early:\n{''.join(lines)}\n{process.stderr.read()}")
        lines.append(line)
        if READY_LINE in line:
            return "".join(lines)
    raise AssertionError("dev did not get ready:\n" + "".join(lines))


def stop_dev(process: subprocess.Popen) -> int:
    """SIGTERM, as Ctrl-C: every broker stops cleanly; the exit code."""
    process.send_signal(signal.SIGTERM)
    return process.wait(60)
