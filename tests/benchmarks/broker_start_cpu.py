"""CPU of one broker process from spawn to ready to a SIGTERM exit, as the suite starts hundreds.

``python -m tests.benchmarks.broker_start_cpu [runs]`` prints one ``FIGURE`` line for
``python -m broker serve`` (how ``highwater dev`` starts brokers), one for the
installed ``highwater serve`` script (which imports kio with hypothesis visible), and one
for a broker forked by the test suite's launcher (``tests.support.launcher``), which has
imported the broker before it forks.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.brokers import free_port, http_json, standalone_serve_arguments
from tests.support.launcher import REPO_ROOT, Launcher
from tests.support.waiting import wait_until

STARTS = {
    "module": [sys.executable, "-m", "broker"],
    "script": [str(Path(sys.executable).with_name("highwater"))],
}


def wait_ready(port: int) -> None:
    wait_until(lambda: http_json("GET", f"http://127.0.0.1:{port}/readyz", timeout_s=1)[0] == 200, "the broker ready")


def start_cpu_s(command: list[str]) -> float:
    """User + system CPU of one broker: started, ready, stopped with SIGTERM."""
    port = free_port()
    process = subprocess.Popen(
        [*command, *standalone_serve_arguments(Path(tempfile.mkdtemp()), port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HIGHWATER_LOG_FORMAT": "json"},
    )
    wait_ready(port)
    process.send_signal(signal.SIGTERM)
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime


def forked_start_cpu_s(launcher: Launcher) -> float:
    """The same for a broker the launcher forks (its own import is paid once, before the first)."""
    directory = Path(tempfile.mkdtemp())
    port = free_port()
    environment = {**os.environ, "HIGHWATER_LOG_FORMAT": "json"}
    process = launcher.launch(standalone_serve_arguments(directory, port), environment, REPO_ROOT, directory / "log")
    wait_ready(port)
    process.send_signal(signal.SIGTERM)
    process.wait(20)
    assert process.cpu_s is not None
    return process.cpu_s


def report(name: str, samples: list[float]) -> None:
    print(
        f"FIGURE broker_start_cpu start={name} median_s={statistics.median(samples):.2f} "
        f"min_s={min(samples):.2f} max_s={max(samples):.2f} runs={len(samples)}"
    )


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for name, command in STARTS.items():
        report(name, [start_cpu_s(command) for _ in range(runs)])
    launcher = Launcher()
    try:
        report("forked", [forked_start_cpu_s(launcher) for _ in range(runs)])
    finally:
        launcher.close()


if __name__ == "__main__":
    main()
