"""CPU of one broker process from spawn to ready to a SIGTERM exit, as the suite starts hundreds.

``python -m tests.benchmarks.broker_start_cpu [runs]`` prints one ``FIGURE`` line for
``python -m broker.cli serve`` (how the tests and ``highwater dev`` start brokers) and one
for the installed ``highwater serve`` script (which imports kio with hypothesis visible).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.brokers import free_port, http_json
from tests.support.waiting import wait_until

STARTS = {
    "module": [sys.executable, "-m", "broker.cli", "serve"],
    "script": [str(Path(sys.executable).with_name("highwater")), "serve"],
}


def start_cpu_s(command: list[str]) -> float:
    """User + system CPU of one broker: started, ready, stopped with SIGTERM."""
    directory = Path(tempfile.mkdtemp())
    port = free_port()
    arguments = ["--node-id", "1", "--host", "127.0.0.1", "--port", str(port), "--data-dir", str(directory / "data")]
    process = subprocess.Popen(
        [*command, *arguments, "--metadata", f"sqlite://{directory / 'metadata.db'}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HIGHWATER_LOG_FORMAT": "json"},
    )
    wait_until(lambda: http_json("GET", f"http://127.0.0.1:{port}/readyz", timeout_s=1)[0] == 200, "the broker ready")
    process.send_signal(signal.SIGTERM)
    _, _, usage = os.wait4(process.pid, 0)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for name, command in STARTS.items():
        samples = [start_cpu_s(command) for _ in range(runs)]
        print(
            f"FIGURE broker_start_cpu start={name} median_s={statistics.median(samples):.2f} "
            f"min_s={min(samples):.2f} max_s={max(samples):.2f} runs={runs}"
        )


if __name__ == "__main__":
    main()
