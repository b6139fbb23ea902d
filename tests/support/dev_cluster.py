"""``highwater dev`` (what ``make run`` starts) as a subprocess of a test.

The command is run as ``make run`` runs it, only on the ports ``free_port_run`` hands
out (HTTP and Kafka both) and in a directory of the test's own, so tests never meet a
cluster a developer left running on 9092. It leads its own process group, with its
brokers, as a command started from a terminal does: ``interrupt_dev`` signals the whole
group, which is what Ctrl-C does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from broker.cli.dev import READY_LINE
from tests.support.brokers import REPO_ROOT, free_port_run


def start_dev(
    directory: Path, base_port: int, brokers: int = 3, *extra: str, kafka_base_port: int | None = None
) -> subprocess.Popen:
    """``highwater dev`` with its Kafka listeners on ports handed out too (``kafka_base_port``, or a fresh run).

    The command's default, HTTP port + 10 000, lies outside this worker's slice of ports
    (in another worker's, or in the kernel's ephemeral range, where a client connection
    can take it as its source port between the command's check and the broker's bind).
    """
    kafka_base = free_port_run(brokers) if kafka_base_port is None else kafka_base_port
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker",
            "dev",
            "--brokers",
            str(brokers),
            "--dir",
            str(directory),
            "--base-port",
            str(base_port),
            "--kafka-base-port",
            str(kafka_base),
            *extra,
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
    )


def read_until_ready(process: subprocess.Popen[str], timeout_s: float = 90.0) -> str:
    """Everything ``dev`` printed up to its ready line (the demo ran, examples printed)."""
    assert process.stdout is not None and process.stderr is not None, "dev runs with its output piped"
    deadline = time.monotonic() + timeout_s
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"dev exited early:\n{''.join(lines)}\n{process.stderr.read()}")
        lines.append(line)
        if READY_LINE in line:
            return "".join(lines)
    raise AssertionError("dev did not get ready:\n" + "".join(lines))


def stop_dev(process: subprocess.Popen) -> int:
    """SIGTERM to dev alone (as a service manager stops it): dev stops every broker cleanly; the exit code."""
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


def interrupt_dev(process: subprocess.Popen) -> tuple[int, str, str]:
    """Ctrl-C: SIGINT to dev and its brokers at once (one process group); exit code, rest of stdout, stderr."""
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    return process.returncode, stdout, stderr


def broker_pids(process: subprocess.Popen) -> list[int]:
    """The broker processes ``dev`` started (its children)."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text()
    return [int(pid) for pid in children.split()]
